"""Replay equivalence: for any sequence of requests and clock moves, replaying the log (or a snapshot of it) into
a fresh coordinator yields identical hard state; plus the record codec and its refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import (
    GroupCoordinator,
    RecordFormatError,
    RecordInvariantError,
    decode_record,
    encode_record,
)
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.coordinator.records import (
    OffsetValue,
    Record,
    new_group_metadata_record,
    new_group_tombstone,
    new_offset_commit_record,
    new_offset_tombstone,
)
from groupcoord.group import GroupMetadataValue, GroupState, MemberMetadataValue
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import (
    DeleteGroupsRequest,
    Errors,
    JoinGroupProtocol,
    JoinGroupResponse,
    MemberIdentity,
    OffsetDeleteRequest,
    OffsetFetchTopic,
)

from .context import CoordinatorTestContext, protocols, round_robin

SLOTS = 4
_MEMBER_OPS = st.one_of(
    st.tuples(st.just("join"), st.integers(0, SLOTS - 1), st.sampled_from(["range", "roundrobin"])),
    st.tuples(st.just("sync"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("heartbeat"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("commit"), st.integers(0, SLOTS - 1), st.integers(0, 3), st.integers(0, 1000)),
    st.tuples(st.just("sleep"), st.integers(0, 6_000)),
)
_RARE_OPS = st.one_of(
    st.tuples(st.just("leave"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("simple_commit"), st.integers(0, 3), st.integers(0, 1000), st.sampled_from([-1, 5000])),
    st.tuples(st.just("sleep"), st.integers(0, 40_000)),
    st.tuples(st.just("metadata"), st.integers(1, 8)),
    st.tuples(st.just("delete"), st.sampled_from(["g", "s"])),
    st.tuples(st.just("offset_delete"), st.sampled_from(["g", "s"]), st.sampled_from(["t", "u"])),
    st.tuples(st.just("expire")),
)
# Member operations are drawn far more often, so that groups get through whole rebalances.
OPS = st.one_of(_MEMBER_OPS, _MEMBER_OPS, _MEMBER_OPS, _RARE_OPS)


class _Driver:
    """Plays operations against a test context, remembering each member slot's id and generation."""

    def __init__(self, ctx: CoordinatorTestContext) -> None:
        self.ctx = ctx
        self.ids: dict[int, str] = {}
        self.generations: dict[int, int] = {}
        self.join_tokens: dict[int, int] = {}

    def _learn(self) -> None:
        for slot, token in list(self.join_tokens.items()):
            response = self.ctx.response(token)
            if isinstance(response, JoinGroupResponse):
                if response.member_id:
                    self.ids[slot] = response.member_id
                if response.error == Errors.NONE:
                    self.generations[slot] = response.generation_id
                del self.join_tokens[slot]

    def play(self, op: tuple[Any, ...]) -> None:
        ctx, kind = self.ctx, op[0]
        self._learn()
        member = self.ids.get(op[1], "") if kind in ("join", "sync", "heartbeat", "leave", "commit") else ""
        generation = self.generations.get(op[1], -1) if member else -1
        if kind == "join":
            for _ in range(2):  # like a real client, rejoin at once after MEMBER_ID_REQUIRED
                self.join_tokens[op[1]] = ctx.join("g", member, protos=protocols(op[2], "range"),
                                                   session_ms=10_000, rebalance_ms=20_000)
                response = ctx.response(self.join_tokens[op[1]])
                if not (isinstance(response, JoinGroupResponse) and response.error == Errors.MEMBER_ID_REQUIRED):
                    break
                member = response.member_id
        elif kind == "sync" and member:
            ctx.sync("g", generation, member, round_robin(list(self.ids.values()), {"t": 4}))
        elif kind == "heartbeat" and member:
            ctx.heartbeat("g", generation, member)
        elif kind == "leave" and member:
            ctx.leave("g", MemberIdentity(member))
        elif kind == "commit" and member:
            ctx.commit("g", {("t", op[2]): op[3]}, generation=generation, member_id=member)
        elif kind == "simple_commit":
            ctx.commit("s", {("u", op[1]): op[2]}, retention_ms=op[3])
        elif kind == "sleep":
            ctx.sleep(op[1])
        elif kind == "metadata":
            ctx.metadata_change({"t": op[1], "u": 2})
        elif kind == "delete":
            ctx.call(DeleteGroupsRequest(groups=(op[1],)))
        elif kind == "offset_delete":
            ctx.call(OffsetDeleteRequest(group_id=op[1], topics=(OffsetFetchTopic(op[2], (0, 1)),)))
        elif kind == "expire":
            ctx.absorb(ctx.coordinator.expire_offsets(ctx.now))
        self._learn()


def _replayed(records: list[Any]) -> GroupCoordinator:
    fresh = GroupCoordinator()
    for record in records:
        fresh.replay(record)
    return fresh


def _assert_live_matches_hard(coordinator: GroupCoordinator) -> None:
    """Every Stable group, and every Empty group that had a generation, is exactly what the log says."""
    hard = dict(coordinator.hard_state().groups)
    for group_id in coordinator.group_ids():
        group = coordinator.group(group_id)
        assert group is not None
        if group.state == GroupState.STABLE or (group.state == GroupState.EMPTY and group.generation_id > 0):
            assert hard[group_id] == group.to_metadata_value(), group_id


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=60))
def test_replaying_the_log_rebuilds_identical_hard_state(ops: list[tuple[Any, ...]]) -> None:
    """Live hard state == log replayed == snapshot replayed; and live groups agree with what they persisted."""
    ctx = CoordinatorTestContext(InMemoryRecordLog())
    driver = _Driver(ctx)
    for op in ops:
        driver.play(op)
        _assert_live_matches_hard(ctx.coordinator)
    live = ctx.coordinator.hard_state()
    from_log = _replayed([decode_record(r) for r in ctx.log.load().records])
    assert from_log.hard_state() == live
    assert _replayed(ctx.coordinator.snapshot_records()).hard_state() == live
    reloaded = ctx.reloaded()
    assert reloaded.coordinator.hard_state() == live
    for group_id in reloaded.coordinator.group_ids():
        group = reloaded.coordinator.group(group_id)
        assert group is not None and group.state in (GroupState.EMPTY, GroupState.STABLE)


def _member(member_id: str = "m-1") -> MemberMetadataValue:
    return MemberMetadataValue(member_id=member_id, group_instance_id="i-1", client_id="c", client_host="/h",
                               rebalance_timeout_ms=1, session_timeout_ms=2,
                               protocols=(JoinGroupProtocol("range", b"\x00\xff"),), assignment=b"\x01")


def test_records_round_trip_through_the_codec() -> None:
    """Every record kind, tombstones included, decodes to what was encoded."""
    group = GroupMetadataValue(protocol_type="consumer", generation_id=3, protocol_name="range", leader_id="m-1",
                               state_timestamp_ms=99, members=(_member(),))
    records: list[Record] = [new_group_metadata_record("g\x00odd", group), new_group_tombstone("g"),
               new_offset_commit_record("g", "t.x", 7, OffsetValue(offset=5, leader_epoch=-1, metadata="é",
                                                                   commit_timestamp_ms=1, expire_timestamp_ms=9)),
               new_offset_tombstone("g", "t", 0)]
    for record in records:
        encoded = encode_record(record)
        assert encoded.format_version == 1
        assert decode_record(encoded) == record
    assert encode_record(records[1]).is_tombstone


@settings(max_examples=300, deadline=None)
@given(group=st.text(max_size=12), topic=st.text(max_size=12), partition=st.integers(0, 2**31 - 1),
       offset=st.integers(-(2**63), 2**63 - 1), epoch=st.integers(-(2**31), 2**31 - 1), metadata=st.text(max_size=20),
       committed=st.integers(0, 2**63 - 1), expire=st.none() | st.integers(0, 2**63 - 1))
def test_offset_records_encode_to_the_bytes_json_gives(group: str, topic: str, partition: int, offset: int,
                                                       epoch: int, metadata: str, committed: int,
                                                       expire: int | None) -> None:
    """The offset record's hand-written encoding (the commit hot path) is byte for byte what json.dumps writes for
    its fields, keys sorted, so logs written before and after it read the same."""
    value = OffsetValue(offset=offset, leader_epoch=epoch, metadata=metadata, commit_timestamp_ms=committed,
                        expire_timestamp_ms=expire)
    encoded = encode_record(new_offset_commit_record(group, topic, partition, value))
    fields = {"offset": offset, "leader_epoch": epoch, "metadata": metadata, "commit_timestamp_ms": committed,
              "expire_timestamp_ms": expire}
    assert encoded.value == json.dumps(fields, sort_keys=True, separators=(",", ":")).encode("utf-8")
    assert encoded.key == json.dumps([group, topic, partition], separators=(",", ":"))


def test_newer_record_format_is_refused_with_a_clear_error() -> None:
    """A log written by a newer groupcoord is not misread."""
    with pytest.raises(RecordFormatError, match="newer"):
        decode_record(EncodedRecord("group_metadata", "g", b"{}", format_version=2))


@pytest.mark.parametrize("encoded", [
    EncodedRecord("mystery", "k", b"{}"),
    EncodedRecord("group_metadata", "g", b"not json"),
    EncodedRecord("offset_commit", "[\"g\"]", b"{}"),
])
def test_malformed_records_are_refused(encoded: EncodedRecord) -> None:
    """Unknown kinds and broken payloads raise RecordFormatError."""
    with pytest.raises(RecordFormatError):
        decode_record(encoded)


def test_replay_forgives_stale_tombstones_but_raises_on_broken_invariants() -> None:
    """Tombstones for unknown keys are ignored; a leader that is no member raises; a negative committed offset is
    what a client committed (Kafka stores it too) and replays."""
    coordinator = GroupCoordinator()
    coordinator.replay(new_group_tombstone("nobody"))
    coordinator.replay(new_offset_tombstone("nobody", "t", 0))
    assert coordinator.hard_state().groups == () and coordinator.hard_state().offsets == ()
    broken = GroupMetadataValue(protocol_type="consumer", generation_id=1, protocol_name="range",
                                leader_id="ghost", state_timestamp_ms=0, members=(_member(),))
    with pytest.raises(RecordInvariantError, match="leader"):
        coordinator.replay(new_group_metadata_record("g", broken))
    coordinator.replay(new_offset_commit_record("g", "t", 0, OffsetValue(
        offset=-2, leader_epoch=-1, metadata="", commit_timestamp_ms=0)))
    assert [value.offset for *_, value in coordinator.hard_state().offsets] == [-2]
