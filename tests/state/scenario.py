"""Inputs for the state tests, made by the real core: a coordinator on a manual clock logs every result to an
in-memory record log, and the materializer is fed the committed batches, as the lease holder would feed it."""

from __future__ import annotations

import datetime as dt

import pyarrow.compute as pc
from deltalake import DeltaTable

from groupcoord.coordinator import decode_record
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import RecordLog
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import DeleteGroupsRequest, Errors, MemberIdentity
from groupcoord.protocol.requests import AlterAclsRequest
from groupcoord.security.acls import AclBinding, AclFilter
from groupcoord.state.materializer import CommittedBatch, Materializer
from groupcoord.state_root import StateRoot
from tests.coordinator.context import CoordinatorTestContext, round_robin

T0_MS = 1_714_550_400_000
"""2024-05-01T08:00:00Z, the manual clock's start."""


def at(ms: int) -> dt.datetime:
    """The UTC datetime of epoch milliseconds ``ms``."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


class LoggedCoordinator:
    """The core (through the core tests' context) logging to an in-memory log, and a materializer on ``root``."""

    def __init__(self, root: StateRoot, *, epoch: int = 1, log: RecordLog | None = None,
                 start_ms: int = T0_MS) -> None:
        self.root = root
        self.log = log or InMemoryRecordLog()
        self.ctx = CoordinatorTestContext(self.log, start_ms=start_ms)
        self.materializer = Materializer(root)
        self.epoch = epoch
        self.applied = self.log.version()

    def pending(self) -> list[CommittedBatch]:
        """The log batches committed since the last :meth:`materialize`."""
        return [CommittedBatch(records=records, log_version=v, epoch=self.epoch, committed_at=at(self.ctx.now))
                for v, records in batches_after(self.log, self.applied)]

    def materialize(self) -> int:
        """Apply every pending batch at once; returns the rows written."""
        batches = self.pending()
        self.applied = self.log.version()
        return self.materializer.apply_batches(batches)

    # --- scenario steps (each one real request sequence through the core) -----------------------------------------
    def stable_group(self, group_id: str, count: int, partitions: int = 4) -> tuple[list[str], int]:
        """``count`` new members reach a Stable generation; the leader deals ``partitions`` of ``t`` round-robin."""
        return self.ctx.stable_group(group_id, count, partitions={"t": partitions})

    def commit(self, group_id: str, offsets: dict[tuple[str, int], int], *, generation: int = -1,
               member_id: str = "") -> None:
        """Commit offsets; every partition must be accepted."""
        response = self.ctx.commit(group_id, offsets, generation=generation, member_id=member_id)
        assert all(p.error == Errors.NONE for t in response.topics for p in t.partitions), response

    def leave_and_rebalance(self, group_id: str, leaving: str, staying: str, partitions: int = 4) -> int:
        """``leaving`` leaves; ``staying`` rejoins alone and, as leader, takes all partitions. Returns the new
        generation."""
        self.ctx.leave(group_id, MemberIdentity(member_id=leaving))
        join = self.ctx.join(group_id, staying)
        self.ctx.sleep_until_answered([join])
        [joined] = self.ctx.assert_all_joined([join])
        sync = self.ctx.sync(group_id, joined.generation_id, staying, round_robin([staying], {"t": partitions}))
        assert self.ctx.sync_response(sync).error == Errors.NONE
        return joined.generation_id

    def alter_acls(self, creations: tuple[AclBinding, ...] = (), deletions: tuple[AclFilter, ...] = ()) -> None:
        """CreateAcls or DeleteAcls; every creation must be accepted."""
        response = self.ctx.call(AlterAclsRequest(creations=creations, deletions=deletions))
        assert all(not r.error.is_error for r in (*response.created, *response.deleted)), response

    def delete_group(self, group_id: str) -> None:
        """DeleteGroups for one (empty) group."""
        response = self.ctx.call(DeleteGroupsRequest(groups=(group_id,)))
        assert [r.error for r in response.results] == [Errors.NONE], response


def take_over(root: StateRoot, *, epoch: int, start_ms: int) -> LoggedCoordinator:
    """A new lease holder of ``root``'s Delta record log: it loads the log, appends its epoch marker, replays the
    records into a fresh core and rebuilds the state tables at the marker's version."""
    record_log = DeltaRecordLog(root.log_path)
    loaded = record_log.load()
    version = record_log.takeover(epoch, expected_version=loaded.version)
    holder = LoggedCoordinator(root, epoch=epoch, log=record_log, start_ms=start_ms)
    for encoded in loaded.records:
        holder.ctx.coordinator.replay(decode_record(encoded))
    holder.ctx.absorb(holder.ctx.coordinator.on_loaded(holder.ctx.now))
    holder.materializer.rebuild(loaded.records, log_version=version, epoch=epoch, now=at(holder.ctx.now))
    return holder


def batches_after(log: RecordLog, version: int) -> list[tuple[int, tuple[EncodedRecord, ...]]]:
    """The batches of ``log`` committed after ``version``, in order, as (log version, records)."""
    if isinstance(log, InMemoryRecordLog):
        return [(v, log.batches[v]) for v in range(version + 1, log.version() + 1)]
    assert isinstance(log, DeltaRecordLog)
    rows = DeltaTable(str(log.path)).to_pyarrow_table()
    rows = rows.filter(pc.greater(rows.column("log_version"), version)).sort_by([("log_version", "ascending"),
                                                                                 ("seq", "ascending")])
    batches: dict[int, list[EncodedRecord]] = {}
    for row in rows.to_pylist():
        batches.setdefault(row["log_version"], []).append(
            EncodedRecord(row["kind"], row["key"], row["value"], row["format_version"]))
    return [(v, tuple(records)) for v, records in sorted(batches.items())]
