"""Groups, members and committed offsets as the Delta state shows them: what ``groups list``/``describe`` print.

Everything here reads the materialized state tables with delta-rs (:func:`groupcoord.state.views.read_view`), so it
works with no coordinator running. A group exists when the ``groups`` view has it or it has committed offsets (a
group that only ever made simple commits has no generation).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.admin.log_offsets import TopicPartitionKey, log_bounds, partition_counts
from groupcoord.state.history import AsOf
from groupcoord.state.schema import ASSIGNMENTS, GROUPS, MEMBERS, OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot

EMPTY = "Empty"


class GroupNotFoundError(LookupError):
    """No group with this id in the state (Kafka's GROUP_ID_NOT_FOUND)."""

    def __init__(self, group_id: str) -> None:
        super().__init__(f"Consumer group '{group_id}' does not exist.")
        self.group_id = group_id


@dataclass(frozen=True)
class GroupSummary:
    """One group: its state at the latest completed generation, protocol and member count."""

    group_id: str
    state: str
    generation: int | None
    protocol: str | None
    members: int


@dataclass(frozen=True)
class MemberRow:
    """One member of a group's latest generation with the partitions assigned to it."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    host: str | None
    client_id: str | None
    partitions: tuple[TopicPartitionKey, ...]


@dataclass(frozen=True)
class OffsetRow:
    """One partition of a group: committed offset, log-end, lag and owner (``None`` where unknown)."""

    group_id: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None
    leader_epoch: int | None
    commit_time: dt.datetime | None


def list_groups(root: StateRoot) -> list[GroupSummary]:
    """Every group, sorted by id; groups known only from their offsets are ``Empty``."""
    summaries = {row["group_id"]: _summary(row) for row in read_view(root, GROUPS).to_pylist()}
    for group_id in read_view(root, OFFSETS).column("group_id").to_pylist():
        summaries.setdefault(group_id, GroupSummary(group_id, EMPTY, None, None, 0))
    return [summaries[g] for g in sorted(summaries)]


def describe_group(root: StateRoot, group_id: str) -> GroupSummary:
    """The summary of ``group_id``; raises :class:`GroupNotFoundError`."""
    for summary in list_groups(root):
        if summary.group_id == group_id:
            return summary
    raise GroupNotFoundError(group_id)


def committed_offsets(root: StateRoot, group_id: str, *, as_of: AsOf | None = None) -> dict[TopicPartitionKey, int]:
    """The committed offsets of ``group_id`` (as of a version or time of the offsets table, if given)."""
    rows = read_view(root, OFFSETS, as_of=as_of).to_pylist()
    return {(r["topic"], r["partition"]): r["offset"] for r in rows if r["group_id"] == group_id
            and r["offset"] is not None}


def group_members(root: StateRoot, group_id: str) -> list[MemberRow]:
    """The members of the group's latest generation with their assigned partitions, sorted by member id."""
    owned: dict[str, list[TopicPartitionKey]] = {}
    for row in read_view(root, ASSIGNMENTS).to_pylist():
        if row["group_id"] == group_id and row["member_id"] is not None and row["topic"] is not None:
            owned.setdefault(row["member_id"], []).append((row["topic"], row["partition"]))
    members = [
        MemberRow(group_id, row["member_id"], row["group_instance_id"], row["client_host"], row["client_id"],
                  tuple(sorted(owned.get(row["member_id"], ()))))
        for row in read_view(root, MEMBERS).to_pylist()
        if row["group_id"] == group_id and row["member_id"] is not None
    ]
    return sorted(members, key=lambda m: m.member_id)


def group_offsets(root: StateRoot, group_id: str) -> list[OffsetRow]:
    """Every partition the group committed or is assigned, with lag against the log-end offset (Kafka's
    ``--describe --offsets``), sorted by topic and partition. Raises :class:`GroupNotFoundError`."""
    describe_group(root, group_id)
    committed = {(r["topic"], r["partition"]): r for r in read_view(root, OFFSETS).to_pylist()
                 if r["group_id"] == group_id}
    owners = {tp: m for m in group_members(root, group_id) for tp in m.partitions}
    counts = partition_counts(root)
    keys = sorted(set(committed) | set(owners))
    bounds = log_bounds(root, {t for t, _ in keys if t in counts})
    rows = []
    for key in keys:
        commit: Mapping[str, object] = committed.get(key, {})
        current = _int_or_none(commit.get("offset"))
        end = bounds[key].end if key in bounds else None
        owner = owners.get(key)
        epoch = _int_or_none(commit.get("leader_epoch"))
        commit_time = commit.get("commit_time")
        rows.append(OffsetRow(
            group_id, key[0], key[1], current, end, lag_of(current, end),
            owner.member_id if owner else None, owner.host if owner else None, owner.client_id if owner else None,
            epoch if epoch is None or epoch >= 0 else None,
            commit_time if isinstance(commit_time, dt.datetime) else None))
    return rows


def lag_of(current: int | None, log_end: int | None) -> int | None:
    """``log_end - current`` (never negative), ``None`` when either is unknown."""
    if current is None or log_end is None:
        return None
    return max(log_end - current, 0)


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _summary(row: Mapping[str, object]) -> GroupSummary:
    generation = row["generation"]
    protocol = row["protocol"]
    members = row["member_count"]
    return GroupSummary(str(row["group_id"]), str(row["state"]), generation if isinstance(generation, int) else None,
                        protocol if isinstance(protocol, str) else None, members if isinstance(members, int) else 0)
