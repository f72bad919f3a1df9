"""Replay equivalence for consumer groups (KIP-848): any sequence of heartbeats, leaves, commits, slow or failed
targets and clock moves leaves hard state that the log, a snapshot of it, and a reloaded coordinator rebuild
exactly; plus the consumer records' codec and replay's refusals."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import (
    GroupCoordinator,
    NeedsTargetAssignment,
    RecordInvariantError,
    decode_record,
    encode_record,
)
from groupcoord.coordinator.consumer_records import (
    new_consumer_group_epoch_record,
    new_consumer_group_epoch_tombstone,
    new_current_assignment_record,
    new_current_assignment_tombstone,
    new_member_metadata_record,
    new_member_metadata_tombstone,
    new_target_epoch_record,
    new_target_epoch_tombstone,
    new_target_member_record,
    new_target_member_tombstone,
)
from groupcoord.coordinator.records import Record
from groupcoord.group.consumer_member import ConsumerGroupMember, MemberState
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsRequest,
    Errors,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)

from .consumer_context import ConsumerGroupContext, T, U

SLOTS = 4
OPS = st.one_of(
    st.tuples(st.just("join"), st.integers(0, SLOTS - 1), st.sampled_from([("t",), ("t", "u"), ("u",)])),
    st.tuples(st.just("beat"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("beat"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("beat"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("leave"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("static_leave"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("commit"), st.integers(0, SLOTS - 1), st.integers(0, 3)),
    st.tuples(st.just("sleep"), st.integers(0, 50_000)),
    st.tuples(st.just("hold")),
    st.tuples(st.just("release")),
    st.tuples(st.just("fail")),
    st.tuples(st.just("delete")),
)


class _Client:
    """One member slot as a client sees it: its id, epoch and the partitions it was last given."""

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.instance_id = f"i-{slot}" if slot % 2 else None
        self.incarnation = 0
        self.member_id = ""
        self.epoch = 0
        self.owned: dict[UUID, frozenset[int]] = {}

    def learn(self, answer: ConsumerGroupHeartbeatResponse | None) -> None:
        if answer is None:
            return
        if answer.error != Errors.NONE:
            self.member_id, self.epoch, self.owned = "", 0, {}
            return
        self.epoch = answer.member_epoch
        if answer.assignment is not None:
            self.owned = dict(answer.assignment)
        if self.epoch < 0:
            self.member_id, self.epoch, self.owned = "", 0, {}


def _play(ctx: ConsumerGroupContext, clients: list[_Client], op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind in ("join", "beat", "leave", "static_leave", "commit"):
        client = clients[op[1]]
        if kind == "join" or not client.member_id:
            if kind not in ("join", "beat"):
                return
            client.incarnation += 1
            client.member_id = f"m{client.slot}-{client.incarnation}"
            client.learn(ctx.join(client.member_id, *(op[2] if kind == "join" else ("t",)),
                                  instance_id=client.instance_id) if ctx.auto_assign else _parked_join(ctx, client))
        elif kind == "beat":
            client.learn(_maybe(ctx, ctx.beat, client.member_id, client.epoch, client.owned,
                                instance_id=client.instance_id))
        elif kind == "leave":
            client.learn(ctx.leave(client.member_id, -1, instance_id=client.instance_id))
        elif kind == "static_leave" and client.instance_id is not None:
            client.learn(ctx.leave(client.member_id, -2, instance_id=client.instance_id))
            client.member_id = ""
        elif kind == "commit":
            ctx.call(OffsetCommitRequest(group_id="g", generation_id=client.epoch, member_id=client.member_id,
                                         topics=(OffsetCommitTopic("t", (OffsetCommitPartition(op[2], 7),)),)))
    elif kind == "sleep":
        ctx.sleep(op[1])
    elif kind == "hold":
        ctx.auto_assign = False
    elif kind == "release":
        ctx.auto_assign = True
        ctx.assign_pending()
    elif kind == "fail" and ctx.pending:
        from groupcoord.coordinator import CompleteTargetAssignment
        effect = ctx.pending.pop(0)
        ctx.absorb(ctx.coordinator.complete_target_assignment(CompleteTargetAssignment(
            group_id=effect.group_id, group_epoch=effect.group_epoch, error=Errors.UNKNOWN_SERVER_ERROR), ctx.now))
    elif kind == "delete":
        ctx.call(DeleteGroupsRequest(groups=("g",)))


def _maybe(ctx: ConsumerGroupContext, send: Any, *args: Any, **kwargs: Any) -> ConsumerGroupHeartbeatResponse | None:
    """A heartbeat that may be parked (the shell is holding its targets): its answer, or ``None``."""
    try:
        answer: ConsumerGroupHeartbeatResponse = send(*args, **kwargs)
    except AssertionError:
        return None
    return answer


def _parked_join(ctx: ConsumerGroupContext, client: _Client) -> ConsumerGroupHeartbeatResponse | None:
    return _maybe(ctx, ctx.join, client.member_id, "t", instance_id=client.instance_id)


def _replayed(records: list[Record]) -> GroupCoordinator:
    fresh = GroupCoordinator()
    for record in records:
        fresh.replay(record)
    return fresh


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=50))
def test_replaying_a_consumer_groups_log_rebuilds_identical_hard_state(ops: list[tuple[Any, ...]]) -> None:
    """Live hard state == the log replayed == a snapshot replayed == a reloaded coordinator's; and every member's
    partitions are held by it alone (replay would refuse otherwise)."""
    ctx = ConsumerGroupContext(InMemoryRecordLog())
    clients = [_Client(slot) for slot in range(SLOTS)]
    for op in ops:
        _play(ctx, clients, op)
    live = ctx.coordinator.hard_state()
    assert _replayed([decode_record(r) for r in ctx.log.load().records]).hard_state() == live
    assert _replayed([decode_record(r) for r in ctx.log.load().compacted().records]).hard_state() == live
    assert _replayed(ctx.coordinator.snapshot_records()).hard_state() == live
    reloaded = ctx.reloaded(auto_assign=False)  # a load asks again for a target the live one did not get
    assert reloaded.coordinator.hard_state() == live
    for group_id in reloaded.coordinator.consumer_group_ids():
        group = reloaded.coordinator.consumer_group(group_id)
        assert group is not None
        assert all(f"consumer-session-{group_id}-{m}" in reloaded.coordinator.timer_keys() for m in group.members)


def test_a_reloaded_coordinator_keeps_the_group_and_answers_its_members_at_their_epochs() -> None:
    """A failover mid-reconciliation: the new coordinator has the same epochs, targets and owners, and the
    revoking member finishes there."""
    ctx = ConsumerGroupContext(InMemoryRecordLog())
    ctx.join("a")
    ctx.join("b")
    ctx.beat("a", 1, {T: (0, 1, 2, 3)})
    other = ctx.reloaded()
    assert other.coordinator.hard_state() == ctx.coordinator.hard_state()
    assert other.beat("a", 1, {T: (0, 1)}).member_epoch == 2
    assert other.beat("b", 2, {}).assignment == {T: frozenset({2, 3})}


def _member(member_id: str = "m", epoch: int = 3) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id=member_id, member_epoch=epoch, previous_member_epoch=2, state=MemberState.UNREVOKED_PARTITIONS,
        instance_id="i", rack_id="r", rebalance_timeout_ms=5, client_id="c", client_host="/h",
        subscribed_topic_names=frozenset({"t", "u"}), subscribed_topic_regex="x.*", server_assignor_name="range",
        assigned_with_epochs={T: {0: 1, 1: 3}}, pending_revocation_with_epochs={U: {1: 2}})


def test_consumer_records_round_trip_through_the_codec() -> None:
    """Every consumer record kind, tombstones included, decodes to what was encoded."""
    records: list[Record] = [
        new_consumer_group_epoch_record("g", 4), new_consumer_group_epoch_tombstone("g"),
        new_member_metadata_record("g", _member()), new_member_metadata_tombstone("g", "m"),
        new_target_member_record("g", "m", {T: frozenset({2, 0}), U: frozenset()}),
        new_target_member_tombstone("g", "m"),
        new_target_epoch_record("g", 4), new_target_epoch_tombstone("g"),
        new_current_assignment_record("g", _member()), new_current_assignment_tombstone("g", "m"),
    ]
    for record in records:
        encoded = encode_record(record)
        assert decode_record(encoded) == record
        assert encoded.is_tombstone == (encoded.value is None)
    assert len({encode_record(r).kind for r in records}) == 5


def test_replay_refuses_what_a_correct_coordinator_never_writes() -> None:
    """A member removed before its assignment ended, a partition owned twice, a group deleted with members."""
    coordinator = GroupCoordinator()
    coordinator.replay(new_member_metadata_tombstone("nobody", "m"))
    coordinator.replay(new_consumer_group_epoch_tombstone("nobody"))
    coordinator.replay(new_current_assignment_record("g", _member("a")))
    with pytest.raises(RecordInvariantError, match="before its current assignment ended"):
        coordinator.replay(new_member_metadata_tombstone("g", "a"))
    with pytest.raises(RecordInvariantError, match="still owned"):
        coordinator.replay(new_current_assignment_record("g", _member("b", epoch=4)))
    with pytest.raises(RecordInvariantError, match="still has members"):
        coordinator.replay(new_consumer_group_epoch_tombstone("g"))


def test_a_coordinator_loaded_before_its_first_metadata_waits_for_it() -> None:
    """Without topic metadata a heartbeat is COORDINATOR_LOAD_IN_PROGRESS (its subscription would resolve to
    nothing) and a group left Assigning is asked for its target only once the first snapshot came."""
    ctx = ConsumerGroupContext(InMemoryRecordLog(), auto_assign=False)
    ctx._tokens.__next__()
    ctx.absorb(ctx.coordinator.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="a", member_epoch=0, rebalance_timeout_ms=1000, subscribed_topic_names=("t",),
        topic_partitions={}), ctx.now, 99))
    fresh = GroupCoordinator()
    for record in ctx.log.load().records:
        fresh.replay(decode_record(record))
    assert fresh.on_loaded(ctx.now).effects == ()
    early = fresh.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="a", member_epoch=1, topic_partitions={}), ctx.now, 1).response_for(1)
    assert isinstance(early, ConsumerGroupHeartbeatResponse) and early.error == Errors.COORDINATOR_LOAD_IN_PROGRESS
    (effect,) = fresh.on_metadata_change({"t": 4}, ctx.now, topic_ids={"t": T}).effects
    assert isinstance(effect, NeedsTargetAssignment) and effect.group_epoch == 1
