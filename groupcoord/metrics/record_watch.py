"""What the core's records say happened: completed rebalances with their duration, and committed offsets.

Every result of the core goes through the runtime's ``persist(records)`` in the order the core made it, on the event
loop, right after the core handled the request (its records are already replayed). :meth:`RecordWatch.watching`
wraps that one seam, so no handler and no hot path changes, and heartbeats (which write no record) cost nothing.

A **rebalance** completes:

- for a classic group, when a generation with members is persisted Stable (its assignment is known). Its duration
  runs from the moment the group left Stable or Empty (``ClassicGroup.rebalance_started_ms``, soft state the core
  keeps) to that generation's Stable timestamp, both on the core's clock;
- for a consumer group (KIP-848), when the group is Stable again (every member reconciled to the target assignment)
  after a new group epoch was persisted; its duration runs from that epoch's record to the record that made the
  group Stable, on the runtime's clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from groupcoord.coordinator import GroupCoordinator
from groupcoord.coordinator.acl_records import AclRecord
from groupcoord.coordinator.consumer_records import ConsumerGroupMetadataRecord
from groupcoord.coordinator.credential_records import UserCredentialRecord
from groupcoord.coordinator.records import GroupMetadataRecord, OffsetCommitRecord, Record
from groupcoord.group.consumer_group import ConsumerGroupState
from groupcoord.metrics.loop_instruments import LoopCounter, LoopHistogram
from groupcoord.runtime import Persist, wall_clock_ms

CLASSIC = "classic"
CONSUMER = "consumer"
"""The ``type`` label's values: Kafka's group types (``kafka-consumer-groups --describe`` shows them so)."""

REBALANCE_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds: a rebalance takes at least a join round trip, and a classic one at most the rebalance timeout."""


class RecordWatch:
    """Turns the records of ``core`` into rebalance and offset-commit metrics (see the module docs)."""

    def __init__(self, core: GroupCoordinator, *, rebalances: LoopHistogram, offset_commits: LoopCounter,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        self._core = core
        self._rebalances = rebalances
        self._offset_commits = offset_commits
        self._clock = clock
        self._generations: dict[str, int] = {}
        self._epochs: dict[str, int] = {}
        self._epoch_started_ms: dict[str, int] = {}

    def watching(self, persist: Persist) -> Persist:
        """``persist`` that first looks at the records it is given."""

        def watch_then_persist(records: Sequence[Record]) -> object:
            self.observe(records)
            return persist(records)

        return watch_then_persist  # type: ignore[return-value]

    def observe(self, records: Sequence[Record]) -> None:
        """Account for one result's records (call it in the order the core made them, on the loop)."""
        consumer_groups: set[str] = set()
        for record in records:
            if isinstance(record, OffsetCommitRecord):
                if record.value is not None:
                    kind = CONSUMER if self._core.consumer_group(record.group_id) is not None else CLASSIC
                    self._offset_commits.inc(kind)
            elif isinstance(record, GroupMetadataRecord):
                self._classic_generation(record)
            elif isinstance(record, ConsumerGroupMetadataRecord):
                self._consumer_epoch(record)
                consumer_groups.add(record.group_id)
            elif isinstance(record, UserCredentialRecord | AclRecord):  # a credential or an ACL: no group
                continue
            else:  # the other records of a consumer group: members, target and current assignments
                consumer_groups.add(record.group_id)
        for group_id in consumer_groups & self._epoch_started_ms.keys():
            self._maybe_consumer_stable(group_id)

    def _classic_generation(self, record: GroupMetadataRecord) -> None:
        value = record.value
        if value is None:
            self._generations.pop(record.group_id, None)
            return
        if not value.members or self._generations.get(record.group_id) == value.generation_id:
            return
        self._generations[record.group_id] = value.generation_id
        group = self._core.group(record.group_id)
        if group is not None and group.rebalance_started_ms is not None:
            seconds = max(0, value.state_timestamp_ms - group.rebalance_started_ms) / 1000
            self._rebalances.observe(CLASSIC, seconds)

    def _consumer_epoch(self, record: ConsumerGroupMetadataRecord) -> None:
        if record.epoch is None:
            self._epochs.pop(record.group_id, None)
            self._epoch_started_ms.pop(record.group_id, None)
            return
        if record.epoch > self._epochs.get(record.group_id, 0):
            self._epochs[record.group_id] = record.epoch
            self._epoch_started_ms.setdefault(record.group_id, self._clock())

    def _maybe_consumer_stable(self, group_id: str) -> None:
        group = self._core.consumer_group(group_id)
        if group is None or group.state is ConsumerGroupState.EMPTY:
            self._epoch_started_ms.pop(group_id, None)
        elif group.state is ConsumerGroupState.STABLE:
            started = self._epoch_started_ms.pop(group_id)
            self._rebalances.observe(CONSUMER, max(0, self._clock() - started) / 1000)
