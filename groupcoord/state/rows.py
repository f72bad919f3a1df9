"""Records to rows: the pure half of the materializer (no Delta), shared by incremental applies and rebuilds.

:class:`RowBuilder` takes the core's typed records in log order and accumulates the rows they add to each
materialized table (:mod:`groupcoord.state.schema`). It also follows each group's persisted generation, because
an offset record does not carry one: a commit accepted while the group has members was made in the group's current
generation (the core refuses commits from other generations and simple commits to non-empty groups), and a commit
to a group without members is a simple commit, with a null generation. The offset record itself has no generation
field, so a snapshot's offsets (restated after their commit) get the generation of the group at the snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any
from uuid import UUID

import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.coordinator.acl_records import AclRecord
from groupcoord.coordinator.records import GroupMetadataRecord, OffsetCommitRecord, OffsetCommits, Record, RecordChunk
from groupcoord.group.metadata import GroupMetadataValue, MemberMetadataValue
from groupcoord.protocol.consumer_protocol import PROTOCOL_TYPE as CONSUMER
from groupcoord.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment, subscribed_topics
from groupcoord.state.acl_rows import acl_columns
from groupcoord.state.consumer_rows import CONSUMER_RECORD_TYPES, StagedConsumerGroups, add_consumer_group_rows
from groupcoord.state.schema import OFFSETS, STATE_TABLES, TIMESTAMP, StateTable, TableName

log = logging.getLogger("groupcoord.state.rows")

STABLE, EMPTY, DEAD = "Stable", "Empty", "Dead"
"""The ``state`` of a group row: a generation with members, one without, a deleted group."""


def group_generation(value: GroupMetadataValue | None) -> int | None:
    """The generation an offset commit to this group was made in: the current one while it has members."""
    return value.generation_id if value is not None and value.members else None


OffsetKey = tuple[str, str, int]
"""(group id, topic, partition)."""


def commit_generations(records: Iterable[Record]) -> dict[OffsetKey, int | None]:
    """For each offset still committed after ``records`` (in log order), the generation its last commit was in."""
    generations: dict[str, int | None] = {}
    found: dict[OffsetKey, int | None] = {}
    for record in records:
        if isinstance(record, GroupMetadataRecord):
            generations[record.group_id] = group_generation(record.value)
        elif not isinstance(record, OffsetCommitRecord):
            continue  # a consumer group's record (KIP-848): its commits have no generation
        elif record.value is None:
            found.pop((record.group_id, record.topic, record.partition), None)
        else:
            found[record.group_id, record.topic, record.partition] = generations.get(record.group_id)
    return found


class RowBuilder:
    """Accumulates the rows of records applied in log order.

    ``generations`` is each group's generation for offset commits (see :func:`group_generation`) at the point where
    the first record applies; the builder updates it as group records pass. ``offset_generations`` overrides it
    for the offsets it names (a rebuild restates offsets long after their commits; see :func:`commit_generations`).

    Offsets are coalesced: of several commits of one partition added to the same builder (one materializer flush),
    only the last one becomes a row. Offset commits are the high-volume stream (every consumer commits every few
    seconds), the views need only the latest, and Delta time travel cannot tell rows of one commit apart anyway;
    groups, members and assignments keep a row for every record of a classic group.

    Consumer groups (KIP-848) replay into ``consumer`` (:mod:`groupcoord.state.consumer_rows`), and each group they
    touch becomes rows when :meth:`tables` is called, its topics named by ``topic_name``; without ``consumer`` their
    records are skipped.
    """

    def __init__(self, generations: Mapping[str, int | None] | None = None, *,
                 offset_generations: Mapping[OffsetKey, int | None] | None = None,
                 consumer: StagedConsumerGroups | None = None,
                 topic_name: Callable[[UUID], str] = str) -> None:
        self.generations: dict[str, int | None] = dict(generations or {})
        self._offset_generations = offset_generations or {}
        self._consumer = consumer
        self._topic_name = topic_name
        self._rows: dict[TableName, list[tuple[Any, ...]]] = {name: [] for name in STATE_TABLES}
        # The offsets' rows as columns (blocks of offsets extend them in C); coalesced per key in tables().
        self._offsets: list[list[Any]] = [[] for _ in OFFSETS.schema]

    def add(self, record: RecordChunk, *, log_version: int, epoch: int, seq: int, now_ms: int) -> None:
        """Add the rows of ``record``, the ``seq``-th record of the batch at ``log_version`` written in ``epoch`` (a
        block of offsets: the records from the ``seq``-th on)."""
        if type(record) is OffsetCommits:
            self._add_offsets(record, log_version=log_version, epoch=epoch, first_seq=seq)
            return
        tags = {"log_version": log_version, "epoch": epoch, "seq": seq}
        if isinstance(record, OffsetCommitRecord):
            self._add_offset(record, tags)
        elif isinstance(record, GroupMetadataRecord):
            self._add_group(record, tags, now_ms)
        elif isinstance(record, CONSUMER_RECORD_TYPES) and self._consumer is not None:
            self._consumer.replay(record, tags, now_ms)
        elif isinstance(record, AclRecord):
            self._row("acls", **acl_columns(record), **tags)

    def tables(self) -> dict[TableName, pa.Table]:
        """The accumulated rows as Arrow tables, only for the tables that have rows."""
        if self._consumer is not None:
            for group_id, touch in self._consumer.touched.items():
                add_consumer_group_rows(self._row, group_id, self._consumer.group(group_id), touch, self._topic_name)
        tables = {name: _to_arrow(STATE_TABLES[name], rows) for name, rows in self._rows.items() if rows}
        if self._offsets[0]:
            tables["offsets"] = _latest_per_key(OFFSETS, _columns_to_arrow(OFFSETS, self._offsets))
        return tables

    # --- per record kind ------------------------------------------------------------------------------------------
    def _add_offset(self, record: OffsetCommitRecord, tags: dict[str, int]) -> None:
        # The row is built in column order, without _row; tables() keeps only the last row of each key (see the class
        # docs).
        value = record.value
        key = (record.group_id, record.topic, record.partition)
        bookkeeping = (value is None, tags["log_version"], tags["epoch"], tags["seq"])
        if value is None:
            data: tuple[Any, ...] = (None,) * 6
        else:
            generation = (self._offset_generations[key] if key in self._offset_generations
                          else self.generations.get(record.group_id))
            data = (value.offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms,
                    value.expire_timestamp_ms, generation)
        list(map(list.append, self._offsets, (*key, *data, *bookkeeping)))

    def _add_offsets(self, commits: OffsetCommits, *, log_version: int, epoch: int, first_seq: int) -> None:
        """The rows of a block of offsets, as :meth:`_add_offset` makes them for each of its records, built column by
        column without a Python call per offset."""
        if self._offset_generations:  # a rebuild's per-offset generations (never a block in practice)
            for seq, record in enumerate(commits.records(), first_seq):
                self._add_offset(record, {"log_version": log_version, "epoch": epoch, "seq": seq})
            return
        count = len(commits)
        list(map(list.extend, self._offsets, (
            repeat(commits.group_id, count), commits.topics, commits.partitions, commits.offsets,
            commits.leader_epochs, commits.metadata, repeat(commits.commit_timestamp_ms, count),
            repeat(commits.expire_timestamp_ms, count), repeat(self.generations.get(commits.group_id), count),
            repeat(False, count), repeat(log_version, count), repeat(epoch, count),
            range(first_seq, first_seq + count))))

    def _add_group(self, record: GroupMetadataRecord, tags: dict[str, int], now_ms: int) -> None:
        group_id, value = record.group_id, record.value
        self.generations[group_id] = group_generation(value)
        if value is None:
            self._row("groups", group_id=group_id, generation=None, state=DEAD, protocol_type=None, protocol=None,
                      leader=None, member_count=0, updated_at=now_ms, deleted=True, **tags)
            self._row("members", group_id=group_id, deleted=True, **tags)
            self._row("assignments", group_id=group_id, deleted=True, **tags)
            return
        generation = value.generation_id
        self._row("groups", group_id=group_id, generation=generation, state=STABLE if value.members else EMPTY,
                  protocol_type=value.protocol_type, protocol=value.protocol_name, leader=value.leader_id,
                  member_count=len(value.members), updated_at=value.state_timestamp_ms, deleted=False, **tags)
        for member in value.members:
            self._row("members", group_id=group_id, generation=generation, member_id=member.member_id,
                      group_instance_id=member.group_instance_id, client_id=member.client_id,
                      client_host=member.client_host, session_timeout_ms=member.session_timeout_ms,
                      rebalance_timeout_ms=member.rebalance_timeout_ms,
                      subscribed_topics=_subscription(value, member), deleted=False, **tags)
        if not value.members:
            self._row("members", group_id=group_id, generation=generation, deleted=True, **tags)
        assigned = 0
        for member in value.members:
            for topic, partition in _assignment(group_id, value, member):
                self._row("assignments", group_id=group_id, generation=generation, member_id=member.member_id,
                          group_instance_id=member.group_instance_id, topic=topic, partition=partition,
                          deleted=False, **tags)
                assigned += 1
        if not assigned:
            self._row("assignments", group_id=group_id, generation=generation, deleted=True, **tags)

    def _row(self, table: TableName, **values: Any) -> None:
        self._rows[table].append(tuple(values.get(column) for column in STATE_TABLES[table].schema.names))


def _subscription(value: GroupMetadataValue, member: MemberMetadataValue) -> list[str] | None:
    """The member's subscribed topics, when its group speaks the consumer protocol and the metadata decodes."""
    if value.protocol_type != CONSUMER:
        return None
    metadata = next((p.metadata for p in member.protocols if p.name == value.protocol_name), None)
    topics = None if metadata is None else subscribed_topics(metadata)
    return None if topics is None else sorted(topics)


def _assignment(group_id: str, value: GroupMetadataValue, member: MemberMetadataValue) -> list[tuple[str, int]]:
    """The member's assigned partitions, when its group speaks the consumer protocol and the assignment decodes."""
    if value.protocol_type != CONSUMER:
        return []
    try:
        assignment = decode_assignment(member.assignment)
    except ConsumerProtocolError as exc:
        log.warning("group %s generation %d: undecodable assignment of member %s: %s",
                    group_id, value.generation_id, member.member_id, exc)
        return []
    return [(tp.topic, partition) for tp in assignment.partitions for partition in tp.partitions]


def _to_arrow(table: StateTable, rows: list[tuple[Any, ...]]) -> pa.Table:
    return _columns_to_arrow(table, zip(*rows, strict=True))


def _columns_to_arrow(table: StateTable, columns: Iterable[Sequence[Any]]) -> pa.Table:
    arrays = []
    for field, cells in zip(table.schema, columns, strict=True):
        if field.type == TIMESTAMP:  # cells hold epoch milliseconds
            arrays.append(pa.array(cells, pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(TIMESTAMP))
        else:
            arrays.append(pa.array(cells, field.type))
    return pa.Table.from_arrays(arrays, schema=table.schema)


def _latest_per_key(table: StateTable, rows: pa.Table) -> pa.Table:
    """Of the rows of each key of ``table``, the last one, the keys in the order of their first rows."""
    index = pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), rows.num_rows)), 1)
    last = rows.select(list(table.keys)).append_column("row", index).group_by(
        list(table.keys), use_threads=False).aggregate([("row", "min"), ("row", "max")])
    if last.num_rows == rows.num_rows:  # no key twice: the rows as they are
        return rows
    return rows.take(pc.take(last.column("row_max"), pc.sort_indices(last.column("row_min"))))
