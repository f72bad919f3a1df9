"""The coordinator's working state and the collector of one call's records, responses and effects.

Handlers receive a :class:`CoordinatorContext`. They change soft state (the live groups, timers) directly and
hard state only through :meth:`CoordinatorContext.append`, which replays each record at once, as Kafka's
coordinator runtime does.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.effects import Effect
from groupcoord.coordinator.hard_state import HardStateStore
from groupcoord.coordinator.records import OffsetCommits, Record, RecordChunk, records_of
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.coordinator.timers import Timers
from groupcoord.group.consumer_member import ConsumerGroupMember
from groupcoord.group.group import ClassicGroup
from groupcoord.group.member import Token
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.requests import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.responses import GroupResponse

MemberIdFactory = Callable[[str], str]
"""Makes a new member id from a prefix (the group instance id or the client id)."""


def random_member_id(prefix: str) -> str:
    """Kafka's form: ``<client id or instance id>-<uuid>``."""
    return f"{prefix or 'member'}-{uuid.uuid4()}"


def kafka_uuid_member_id() -> str:
    """A member id as Kafka's group coordinator makes one for a classic member joining a consumer group: a random
    uuid in Kafka's ``Uuid.toString()`` form (URL-safe base64 of its 16 bytes, unpadded: 22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def heartbeat_key(group_id: str, member_id: str) -> str:
    """Timer key of a member's session (and of a pending member's wait)."""
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    """Timer key of a group's join phase (rebalance timeout or initial delay)."""
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    """Timer key of a group's wait for SyncGroup from every member."""
    return f"sync-{group_id}"


def overdue_key(group_id: str) -> str:
    """Timer key of the warning for a rebalance phase that outlives the group's rebalance timeout."""
    return f"overdue-{group_id}"


def consumer_session_key(group_id: str, member_id: str) -> str:
    """Timer key of a consumer-group member's session (Kafka's ``consumer-group-session-timeout-...``)."""
    return f"consumer-session-{group_id}-{member_id}"


def consumer_rebalance_key(group_id: str, member_id: str) -> str:
    """Timer key of a consumer-group member's deadline to revoke partitions (its rebalance timeout)."""
    return f"consumer-rebalance-{group_id}-{member_id}"


def consumer_assignment_key(group_id: str) -> str:
    """Timer key of a consumer group's next target assignment, deferred by ``group.consumer.assignment.interval.ms``."""
    return f"consumer-assignment-{group_id}"


def consumer_join_key(group_id: str, member_id: str) -> str:
    """Timer key of a classic member's deadline to rejoin its consumer group once told to (its rebalance
    timeout; Kafka's ``consumer-group-join-timeout-...``)."""
    return f"consumer-join-{group_id}-{member_id}"


def consumer_sync_key(group_id: str, member_id: str) -> str:
    """Timer key of a classic member's deadline to send SyncGroup after its JoinGroup in a consumer group."""
    return f"consumer-sync-{group_id}-{member_id}"


OFFSETS_EXPIRATION_KEY = "offsets-expiration"


@dataclass(frozen=True)
class ParkedHeartbeat:
    """A consumer-group heartbeat waiting for the target assignment of its group's epoch: its token, the request,
    the member as it was before the heartbeat (to tell whether its assignment changed) and whether the heartbeat
    changed the member's subscription."""

    token: Token
    request: ConsumerGroupHeartbeatRequest
    member_id: str
    before: ConsumerGroupMember
    subscription_changed: bool


@dataclass(frozen=True)
class ParkedClassicJoin:
    """A classic member's JoinGroup to a consumer group, waiting like a heartbeat for the target assignment of the
    group's epoch: ``answer`` reconciles the member and answers once the target is written (with the time then),
    ``fail`` answers the JoinGroup with an error."""

    token: Token
    member_id: str
    answer: Callable[[int], None]
    fail: Callable[[ErrorCode, str | None], None]


Parked = ParkedHeartbeat | ParkedClassicJoin
"""A request waiting for its consumer group's target assignment."""


class CoordinatorContext:
    """Live groups, hard state, timers, configuration, and the output of the call in progress.

    ``groups`` are the live classic groups; consumer groups (KIP-848) live in ``hard`` (all of their state is
    hard), with three soft books here: ``topic_ids`` (topic name to id, from the last metadata snapshot),
    ``parked_heartbeats`` (heartbeats, and classic members' JoinGroups, waiting for a target assignment, by group)
    and ``pending_targets`` (the group epoch whose target assignment the shell was asked for, by group), with
    ``last_targets_ms`` (when each group's last target was written, for ``group.consumer.assignment.interval.ms``).
    ``now_ms`` is the time of the call (or timer) in progress.
    """

    def __init__(self, config: CoordinatorConfig, member_id_factory: MemberIdFactory) -> None:
        self.config = config
        self.new_member_id = member_id_factory
        self.groups: dict[str, ClassicGroup] = {}
        self.hard = HardStateStore()
        self.timers = Timers()
        self.partition_counts: dict[str, int] | None = None
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.parked_heartbeats: dict[str, list[Parked]] = {}
        self.pending_targets: dict[str, int] = {}
        self.last_targets_ms: dict[str, int] = {}
        self.now_ms = 0
        self._records: list[RecordChunk] = []
        self._responses: list[tuple[Token, GroupResponse]] = []
        self._effects: list[Effect] = []

    def append(self, record: Record) -> None:
        """Replay ``record`` into hard state and add it to this call's records."""
        self.hard.replay(record)
        self._records.append(record)

    def append_offsets(self, commits: OffsetCommits) -> None:
        """Replay the block of offsets ``commits`` into hard state and add it to this call's records."""
        self.hard.replay_offsets(commits)
        self._records.append(commits)

    def respond(self, token: Token, response: GroupResponse) -> None:
        """Queue ``response`` for the request identified by ``token``."""
        self._responses.append((token, response))

    def emit(self, effect: Effect) -> None:
        """Queue an effect for the shell."""
        self._effects.append(effect)

    def drain(self) -> CoordinatorResult:
        """Everything queued since the last drain."""
        result = CoordinatorResult(records_of(self._records), tuple(self._responses), tuple(self._effects))
        self._records.clear()
        self._responses.clear()
        self._effects.clear()
        return result

    def register_group(self, group: ClassicGroup) -> None:
        """Start tracking ``group``."""
        self.groups[group.group_id] = group

    def forget_group(self, group: ClassicGroup) -> None:
        """Stop tracking ``group`` (it is Dead) and cancel its timers."""
        self.timers.cancel(join_key(group.group_id))
        self.timers.cancel(sync_key(group.group_id))
        self.timers.cancel(overdue_key(group.group_id))
        for member_id in [*group.members, *group.pending_members]:
            self.timers.cancel(heartbeat_key(group.group_id, member_id))
        self.groups.pop(group.group_id, None)
