"""Hard state: what the record log holds, changed only by :meth:`HardStateStore.replay`.

For each classic group, the persisted form of its last completed generation; for each group and partition, the
committed offset; each consumer group (KIP-848) whole, since all of it is hard state
(:mod:`groupcoord.coordinator.consumer_replay`); each user's credential per SASL mechanism; the ACL bindings.
Replay forgives stale input (a tombstone for something unknown is ignored) and raises :class:`RecordInvariantError`
on a record that could not have been written by a correct coordinator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from groupcoord.coordinator.acl_records import AclRecord, new_acl_record
from groupcoord.coordinator.consumer_records import ConsumerGroupRecord
from groupcoord.coordinator.consumer_replay import (
    ConsumerReplayError,
    consumer_group_records,
    replay_consumer_record,
)
from groupcoord.coordinator.credential_records import UserCredentialRecord, new_user_credential_record
from groupcoord.coordinator.records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    OffsetCommits,
    OffsetValue,
    Record,
    new_group_metadata_record,
    new_offset_commit_record,
)
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.metadata import GroupInvariantError, GroupMetadataValue
from groupcoord.security.acl_store import AclStore
from groupcoord.security.acls import AclBinding, AclError
from groupcoord.security.credentials import Credential, Credentials

TopicPartition = tuple[str, int]


class RecordInvariantError(ValueError):
    """A record breaks an invariant of the hard state; the log is corrupt or was written by a buggy coordinator."""


@dataclass(frozen=True)
class HardState:
    """A comparable copy of all hard state, sorted (for replay-equivalence checks)."""

    groups: tuple[tuple[str, GroupMetadataValue], ...]
    offsets: tuple[tuple[str, str, int, OffsetValue], ...]
    consumer_groups: tuple[ConsumerGroupRecord, ...] = ()
    credentials: tuple[tuple[str, str, Credential], ...] = ()
    acls: tuple[AclBinding, ...] = ()


class HardStateStore:
    """Persisted group metadata and committed offsets, keyed like the records that write them."""

    def __init__(self) -> None:
        self._groups: dict[str, GroupMetadataValue] = {}
        self._offsets: dict[str, dict[TopicPartition, OffsetValue]] = {}
        self._consumer_groups: dict[str, ConsumerGroup] = {}
        self._credentials = Credentials()
        self._acls = AclStore()

    def replay(self, record: Record) -> None:
        """Apply one record; the only code that changes hard state."""
        if isinstance(record, OffsetCommitRecord):  # first: most records are offset commits
            self._replay_offset(record)
        elif isinstance(record, GroupMetadataRecord):
            self._replay_group(record)
        elif isinstance(record, UserCredentialRecord):
            self._replay_credential(record)
        elif isinstance(record, AclRecord):
            self._replay_acl(record)
        else:
            try:
                replay_consumer_record(self._consumer_groups, record)
            except ConsumerReplayError as exc:
                raise RecordInvariantError(str(exc)) from None

    def _replay_group(self, record: GroupMetadataRecord) -> None:
        if not record.group_id:
            raise RecordInvariantError("group metadata record without a group id")
        if record.value is None:
            self._groups.pop(record.group_id, None)
            return
        try:
            record.value.check_invariants()
        except GroupInvariantError as exc:
            raise RecordInvariantError(f"group {record.group_id!r}: {exc}") from None
        self._groups[record.group_id] = record.value

    def _replay_credential(self, record: UserCredentialRecord) -> None:
        if not record.user:
            raise RecordInvariantError("credential record without a user")
        if record.value is None:
            self._credentials.remove(record.user, record.mechanism)
            return
        try:
            self._credentials.put(record.user, record.mechanism, record.value)
        except ValueError as exc:
            raise RecordInvariantError(f"credential of {record.user!r}: {exc}") from None

    def _replay_acl(self, record: AclRecord) -> None:
        if not record.present:
            self._acls.remove(record.binding)
            return
        try:
            self._acls.add(record.binding.check())
        except AclError as exc:
            raise RecordInvariantError(f"ACL {record.binding.describe()}: {exc}") from None

    def _replay_offset(self, record: OffsetCommitRecord) -> None:
        if not record.group_id or not record.topic or record.partition < 0:
            raise RecordInvariantError(
                f"offset record with an invalid key: {record.group_id!r} {record.topic!r} {record.partition}")
        key = (record.topic, record.partition)
        if record.value is None:
            offsets = self._offsets.get(record.group_id)
            if offsets is not None:
                offsets.pop(key, None)
                if not offsets:
                    del self._offsets[record.group_id]
            return
        self._offsets.setdefault(record.group_id, {})[key] = record.value

    def replay_offsets(self, commits: OffsetCommits) -> None:
        """Apply a block of offsets: the same as replaying each record it stands for, in one dict update."""
        if not commits.partitions:
            return
        if not commits.group_id or not all(commits.topics) or min(commits.partitions) < 0:
            bad = next(r for r in commits.records() if not r.group_id or not r.topic or r.partition < 0)
            self._replay_offset(bad)  # raises, naming the record
        self._offsets.setdefault(commits.group_id, {}).update(zip(commits.keys(), commits.values(), strict=True))

    # --- reads -------------------------------------------------------------------------------------------------
    def group(self, group_id: str) -> GroupMetadataValue | None:
        """The persisted generation of ``group_id``."""
        return self._groups.get(group_id)

    def offsets(self, group_id: str) -> Mapping[TopicPartition, OffsetValue]:
        """The committed offsets of ``group_id`` (read-only view)."""
        return MappingProxyType(self._offsets.get(group_id, {}))

    def group_ids(self) -> list[str]:
        """Every classic group with persisted metadata, and every group with offsets that is not a consumer group,
        sorted."""
        return sorted((set(self._groups) | set(self._offsets)) - set(self._consumer_groups))

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group ``group_id``. Only replay may change it; handlers read it."""
        return self._consumer_groups.get(group_id)

    def consumer_group_ids(self) -> list[str]:
        """Every consumer group, sorted."""
        return sorted(self._consumer_groups)

    @property
    def credentials(self) -> Credentials:
        """The users' credentials. Only replay may change them; the endpoint and handlers read them."""
        return self._credentials

    @property
    def acls(self) -> AclStore:
        """The ACL bindings. Only replay may change them; the authorizer and the ACL APIs read them."""
        return self._acls

    def snapshot(self) -> HardState:
        """A comparable copy of everything."""
        return HardState(
            groups=tuple(sorted(self._groups.items())),
            offsets=tuple((g, t, p, v) for g in sorted(self._offsets)
                          for (t, p), v in sorted(self._offsets[g].items())),
            consumer_groups=tuple(r for g in sorted(self._consumer_groups)
                                  for r in consumer_group_records(self._consumer_groups[g])),
            credentials=tuple(self._credentials.items()),
            acls=tuple(sorted(self._acls)))

    def snapshot_records(self) -> list[Record]:
        """Records that rebuild this state from nothing (for log snapshots)."""
        state = self.snapshot()
        records: list[Record] = [new_group_metadata_record(g, v) for g, v in state.groups]
        records.extend(state.consumer_groups)
        records.extend(new_offset_commit_record(g, t, p, v) for g, t, p, v in state.offsets)
        records.extend(new_user_credential_record(u, m, c) for u, m, c in state.credentials)
        records.extend(new_acl_record(binding) for binding in state.acls)
        return records
