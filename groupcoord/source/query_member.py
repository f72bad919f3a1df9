"""The one group member of a streaming query, in the source's driver-side Python worker.

It is a :class:`~groupcoord.member.GroupMember` (the threaded shell of the pure
:class:`~groupcoord.member.protocol_machine.MemberMachine`): it reaches the coordinator over the wire, found through
the state root's lease table, heartbeats from its own thread, and rebalances only when the source polls it, between
micro-batches. On top it keeps, for every partition it owns, the generation in which it acquired it (what offsets and
commits are fenced by), and publishes that as its :mod:`~groupcoord.source.fences` fence after each poll.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from kafka.structs import TopicPartition

from groupcoord.member import CommitFailedError, CoordinatorRequestError, CoordinatorUnavailableError, GroupMember
from groupcoord.source.fences import OwnershipFence, publish_fence, withdraw_fence
from groupcoord.source.options import SourceOptions

log = logging.getLogger("groupcoord.source.member")

MIRROR_ATTEMPTS = 3
"""How often :class:`KafkaCommitMirror` tries a commit that fails with an error Kafka calls retriable."""
MIRROR_BACKOFF_S = 0.5
"""The wait before the second try (doubled before the third)."""


class _Acquisitions:
    """The rebalance listener: which generation each owned partition was acquired in."""

    def __init__(self) -> None:
        self.member: GroupMember | None = None
        self.acquired: dict[TopicPartition, int] = {}

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        """Newly owned partitions come in the member's current generation."""
        assert self.member is not None
        generation = self.member.generation.generation_id
        for tp in assigned:
            self.acquired[tp] = generation

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        """Given up cleanly: the previous batch has finished (the source polls only between batches)."""
        for tp in revoked:
            self.acquired.pop(tp, None)

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        """Lost with the generation: nothing read from them may be committed any more."""
        self.on_partitions_revoked(lost)


class KafkaCommitMirror:
    """Copies the query's group commits to the group of the same name on the source Kafka cluster
    (``mirrorCommitsToKafka``), so that tools pointed at that cluster see the query's progress and lag.

    It commits as a client outside the group (librdkafka's commit without a subscription: generation -1), which
    Kafka accepts while the group has no members there. A failure is logged, never raised: the group in the state
    root stays the one that counts.
    """

    def __init__(self, group_id: str, servers: str, settings: Mapping[str, str]) -> None:
        from confluent_kafka import Consumer

        from groupcoord.source.records import kafka_client_config

        self.group_id = group_id
        self._consumer = Consumer({**kafka_client_config(servers, settings), "group.id": group_id})

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` (next offsets) to the Kafka cluster's group, synchronously; an error Kafka calls
        retriable is tried again (:data:`MIRROR_ATTEMPTS` in all), since an AvailableNow query's last commit has no
        later one to carry its offsets over."""
        for attempt in range(1, MIRROR_ATTEMPTS + 1):
            error, retriable = self._commit_once(offsets)
            if error is None:
                return
            if not retriable or attempt == MIRROR_ATTEMPTS:
                log.warning("group %s: offsets not mirrored to the Kafka cluster: %s", self.group_id, error)
                return
            log.info("group %s: mirroring offsets to the Kafka cluster failed (%s); trying again", self.group_id,
                     error)
            time.sleep(MIRROR_BACKOFF_S * attempt)

    def _commit_once(self, offsets: Mapping[TopicPartition, int]) -> tuple[str | None, bool]:
        """One synchronous commit: ``(None, _)`` when every partition was committed, else the error text and
        whether Kafka calls every error in it retriable."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaPartition

        try:
            results = self._consumer.commit(offsets=[KafkaPartition(tp.topic, tp.partition, o)
                                                     for tp, o in sorted(offsets.items())], asynchronous=False)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            return str(exc), bool(error is not None and hasattr(error, "retriable") and error.retriable())
        failed = [r for r in results or [] if r.error is not None]
        if not failed:
            return None, False
        return ("; ".join(f"{r.topic}-{r.partition}: {r.error}" for r in failed),
                all(r.error is not None and r.error.retriable() for r in failed))

    def close(self) -> None:
        """Close the client."""
        self._consumer.close()


class QueryMember:
    """The query's member (see the module docstring). Used from one thread, the source's."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._acquisitions = _Acquisitions()
        self.member = GroupMember(
            options.group_id, topics=options.topics, pattern=options.pattern, state_root=options.open_root(),
            session_timeout_ms=options.session_timeout_ms, heartbeat_interval_ms=options.heartbeat_interval_ms,
            rebalance_timeout_ms=options.rebalance_timeout_ms, assignors=options.assignors,
            listener=self._acquisitions, options=options.member)
        self._acquisitions.member = self.member
        self._committed: dict[TopicPartition, int] = {}
        self._mirror = KafkaCommitMirror(options.group_id, options.bootstrap_servers, options.kafka_settings) \
            if options.mirror_commits and options.bootstrap_servers else None

    @property
    def member_id(self) -> str:
        """This member's id in the group (empty before the first join)."""
        return self.member.member_id

    @property
    def generation_id(self) -> int:
        """The generation the member is in."""
        return self.member.generation.generation_id

    def poll(self, timeout_ms: int) -> dict[TopicPartition, int]:
        """Rebalance if needed; the owned partitions, each with the generation it was acquired in."""
        owned = self.member.poll(timeout_ms)
        acquired = {tp: g for tp, g in self._acquisitions.acquired.items() if tp in owned}
        if self.member_id:
            publish_fence(self.options.state_root, OwnershipFence(self.options.group_id, self.member_id,
                                                                  self.generation_id, acquired))
        return acquired

    def owns(self, tp: TopicPartition, acquired: int) -> bool:
        """True while ``tp`` is owned from the acquisition in generation ``acquired``."""
        return self._acquisitions.acquired.get(tp) == acquired and tp in self.member.assignment()

    def commit(self, offsets: Mapping[TopicPartition, int]) -> bool:
        """Commit ``offsets`` (next offsets) that differ from what this member last committed; True if done.

        The caller has checked ownership; the coordinator checks member and generation. A refusal (the generation
        ended) is logged, not raised: the partitions' next owner starts from the last committed offset or later.
        """
        changed = {tp: o for tp, o in offsets.items() if self._committed.get(tp) != o}
        if not changed:
            return True
        try:
            # Never move the group's offset backwards: the groupcoord-delta sink commits its table's versions,
            # which a replay of another query's batch may have put past this batch's end (a driver restarted:
            # the replay wrote 300-350, this batch read 300-325 and the sink kept 350). Committing 325 then
            # would undo an acknowledged commit.
            ahead = {tp: o for tp, o in self.committed(changed).items() if o is not None and o > changed[tp]}
            changed = {tp: o for tp, o in changed.items() if tp not in ahead}
            if ahead:
                log.info("group %s: offsets not committed, the group's are further: %s", self.options.group_id,
                         {f"{tp.topic}-{tp.partition}": f"{offsets[tp]} < {o}" for tp, o in ahead.items()})
            if not changed:
                return True
            self.member.commit_sync(changed)
        except (CommitFailedError, CoordinatorRequestError, CoordinatorUnavailableError) as exc:
            log.warning("group %s: offsets %s not committed: %s", self.options.group_id,
                        {f"{tp.topic}-{tp.partition}": o for tp, o in changed.items()}, exc)
            return False
        self._committed.update(changed)
        if self._mirror is not None:
            self._mirror.commit(changed)
        return True

    def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed (next) offsets of ``partitions``; ``None`` where none is committed."""
        fetched = self.member.committed(partitions)
        return {tp: (o.offset if o is not None else None) for tp, o in fetched.items()}

    def close(self) -> None:
        """Leave the group (its partitions move on at once) and withdraw the fence."""
        member_id = self.member_id
        try:
            self.member.close()
            if self._mirror is not None:
                self._mirror.close()
        finally:
            if member_id:
                withdraw_fence(self.options.state_root, self.options.group_id, member_id)
