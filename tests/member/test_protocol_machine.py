"""The member protocol machine on a manual clock: every transition and error path, with no sockets or threads."""

from __future__ import annotations

import doctest
from collections.abc import Sequence

import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.member.heartbeat import HeartbeatTiming
from groupcoord.member.protocol_machine import (
    AssignAsLeader,
    CommitBeforeRevoke,
    CommitCompleted,
    CommitOutcome,
    CoordinatorLost,
    MachineConfig,
    MemberFailed,
    MemberMachine,
    Output,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Phase,
    Send,
)
from groupcoord.member.subscription import grouped
from groupcoord.protocol.consumer_protocol import Assignment, decode_subscription, encode_assignment
from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from groupcoord.protocol.responses import (
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupResponse,
    OffsetCommitResponse,
    PartitionError,
    SyncGroupResponse,
    TopicPartitionErrors,
)

TIMING = HeartbeatTiming(session_timeout_ms=10_000, heartbeat_interval_ms=3000, rebalance_timeout_ms=30_000,
                         retry_backoff_ms=100)
T0, T1, T2, T3 = (TopicPartition("t", p) for p in range(4))


class ManualMs:
    """Milliseconds that move only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def machine(clock: ManualMs, **overrides: object) -> MemberMachine:
    settings: dict[str, object] = {"group_id": "g", "timing": TIMING, "protocols": ("server-range",),
                                   "topics": ("t",)}
    settings.update(overrides)
    return MemberMachine(MachineConfig(**settings), clock=clock)  # type: ignore[arg-type]


def assignment(*partitions: TopicPartition) -> bytes:
    return encode_assignment(Assignment(partitions=grouped(partitions)))


def only_send(outputs: Sequence[Output]) -> Send:
    (send,) = outputs
    assert isinstance(send, Send)
    return send


def join(m: MemberMachine, generation: int, member_id: str = "m-1", *, leader: str = "m-1",
         protocol: str = "server-range") -> Send:
    """Poll, answer the JoinGroup; the machine's SyncGroup."""
    sent = only_send(m.poll())
    assert isinstance(sent.request, JoinGroupRequest)
    return only_send(m.on_response(sent.request_id, JoinGroupResponse(
        error=Errors.NONE, generation_id=generation, member_id=member_id, leader=leader, protocol_name=protocol)))


def stable(m: MemberMachine, generation: int, *partitions: TopicPartition, member_id: str = "m-1") -> None:
    """Join and sync into ``generation`` owning ``partitions``."""
    sync = join(m, generation, member_id, leader=member_id)
    outputs = m.on_response(sync.request_id, SyncGroupResponse(error=Errors.NONE, assignment=assignment(*partitions)))
    assert isinstance(outputs[-1], PartitionsAssigned) and m.phase is Phase.STABLE


def heartbeat(m: MemberMachine, clock: ManualMs, error: ErrorCode) -> list[Output]:
    clock.now += TIMING.heartbeat_interval_ms
    sent = only_send(m.on_time())
    assert isinstance(sent.request, HeartbeatRequest)
    return m.on_response(sent.request_id, HeartbeatResponse(error=error))


def commit_answer(error: ErrorCode, tp: TopicPartition = T0) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=(TopicPartitionErrors(tp.topic, (PartitionError(tp.partition, error),)),))


def test_kip_394_member_id_required_then_join_with_it_and_sync_server_side() -> None:
    clock = ManualMs()
    m = machine(clock)
    first = only_send(m.poll())
    assert isinstance(first.request, JoinGroupRequest) and first.request.member_id == ""
    assert m.on_response(first.request_id, JoinGroupResponse(error=Errors.MEMBER_ID_REQUIRED, member_id="m-7")) == []
    assert m.phase is Phase.UNJOINED and m.generation.member_id == "m-7"
    second = only_send(m.poll())
    assert isinstance(second.request, JoinGroupRequest) and second.request.member_id == "m-7"
    assert second.request.reason == "member id required"
    sync = only_send(m.on_response(second.request_id, JoinGroupResponse(
        error=Errors.NONE, generation_id=1, member_id="m-7", leader="m-7", protocol_name="server-range")))
    assert isinstance(sync.request, SyncGroupRequest) and sync.request.assignments == ()  # the server assigns
    (assigned,) = m.on_response(sync.request_id, SyncGroupResponse(error=Errors.NONE, assignment=assignment(T0, T1)))
    assert assigned == PartitionsAssigned(frozenset({T0, T1}), frozenset({T0, T1}), m.generation)
    assert m.stable and m.generation.generation_id == 1 and m.poll() == []


def test_a_client_side_leader_assigns_then_syncs_everyones_assignment() -> None:
    m = machine(ManualMs(), protocols=("range",))
    sent = only_send(m.poll())
    members = (JoinGroupMember("m-1", None, b"a"), JoinGroupMember("m-2", None, b"b"))
    (ask,) = m.on_response(sent.request_id, JoinGroupResponse(
        error=Errors.NONE, generation_id=3, member_id="m-1", leader="m-1", protocol_name="range", members=members))
    assert ask == AssignAsLeader("range", members) and m.phase is Phase.ASSIGNING
    sync = only_send(m.assigned({"m-2": b"y", "m-1": b"x"}))
    assert isinstance(sync.request, SyncGroupRequest)
    assert [(a.member_id, a.assignment) for a in sync.request.assignments] == [("m-1", b"x"), ("m-2", b"y")]
    assert m.assigned({}) == []  # only once per round


def test_a_follower_and_a_skipped_assignment_sync_without_assigning() -> None:
    follower = machine(ManualMs(), protocols=("range",))
    assert isinstance(join(follower, 2, "m-2", leader="m-1", protocol="range").request, SyncGroupRequest)
    static_leader = machine(ManualMs(), protocols=("range",), group_instance_id="i-1")
    sent = only_send(static_leader.poll())
    assert isinstance(sent.request, JoinGroupRequest) and sent.request.group_instance_id == "i-1"
    outputs = static_leader.on_response(sent.request_id, JoinGroupResponse(
        error=Errors.NONE, generation_id=2, member_id="m-1", leader="m-1", protocol_name="range",
        skip_assignment=True))
    assert isinstance(only_send(outputs).request, SyncGroupRequest) and static_leader.is_leader


def test_an_eager_member_revokes_everything_before_the_join_and_the_join_follows_on_the_next_poll() -> None:
    m = machine(ManualMs())
    stable(m, 1, T0, T1)
    m.request_rejoin("test")
    assert m.poll() == [PartitionsRevoked(frozenset({T0, T1}))]
    assert m.commit_generation().generation_id == 1  # the revocation callback still commits in generation 1
    sent = only_send(m.poll())
    assert isinstance(sent.request, JoinGroupRequest)
    assert decode_subscription(sent.request.protocols[0].metadata).owned_partitions == ()
    assert m.commit_generation().generation_id == -1  # a commit during the rebalance is refused by the coordinator


def test_a_cooperative_member_keeps_its_partitions_revokes_only_what_moves_then_rejoins() -> None:
    m = machine(ManualMs(), protocols=("server-cooperative-sticky",), cooperative=True)
    stable(m, 1, T0, T1, T2)
    m.request_rejoin("a member joined")
    sent = only_send(m.poll())  # nothing revoked before the join
    assert isinstance(sent.request, JoinGroupRequest)
    owned = decode_subscription(sent.request.protocols[0].metadata).owned_partitions
    assert [(tp.topic, tp.partitions) for tp in owned] == [("t", (0, 1, 2))]
    sync = only_send(m.on_response(sent.request_id, JoinGroupResponse(
        error=Errors.NONE, generation_id=2, member_id="m-1", leader="m-1", protocol_name="server-cooperative-sticky")))
    outputs = m.on_response(sync.request_id, SyncGroupResponse(error=Errors.NONE, assignment=assignment(T0, T1)))
    assert outputs == [PartitionsRevoked(frozenset({T2})), PartitionsAssigned(frozenset(), frozenset({T0, T1}),
                                                                             m.generation)]
    assert not m.stable and m.rejoin_reason == "revoked 1 partition(s)"
    assert isinstance(only_send(m.poll()).request, JoinGroupRequest)  # the follow-up round hands T2 over


def test_a_cooperative_member_revokes_the_topics_it_no_longer_subscribes_to_before_joining() -> None:
    m = machine(ManualMs(), protocols=("server-cooperative-sticky",), cooperative=True, topics=("t", "u"))
    u0 = TopicPartition("u", 0)
    stable(m, 1, T0, u0)
    m.subscribe(["t"])
    m.subscribe(["t"])  # the same subscription again changes nothing
    assert m.rejoin_reason == "subscribed topics changed"
    assert m.poll() == [PartitionsRevoked(frozenset({u0}))]
    assert isinstance(only_send(m.poll()).request, JoinGroupRequest)


@pytest.mark.parametrize("error", [Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION])
def test_a_lost_generation_loses_the_partitions_and_rejoins(error: ErrorCode) -> None:
    clock = ManualMs()
    m = machine(clock)
    stable(m, 4, T0)
    assert heartbeat(m, clock, error) == []
    assert m.phase is Phase.UNJOINED and m.generation.generation_id == -1
    assert m.generation.member_id == ("m-1" if error is Errors.ILLEGAL_GENERATION else "")
    lost, rejoin = m.poll()
    assert lost == PartitionsLost(frozenset({T0})) and isinstance(rejoin, Send)
    assert isinstance(rejoin.request, JoinGroupRequest) and rejoin.request.member_id == m.generation.member_id
    assert m.owned == frozenset()


def test_rebalance_in_progress_rejoins_and_an_answer_about_an_older_generation_changes_nothing() -> None:
    clock = ManualMs()
    m = machine(clock)
    stable(m, 1, T0)
    stale = m.commit({T0: OffsetAndMetadata(5, "", -1)})
    assert heartbeat(m, clock, Errors.REBALANCE_IN_PROGRESS) == []
    assert m.phase is Phase.STABLE and m.rejoin_reason == "Heartbeat: REBALANCE_IN_PROGRESS"
    m.poll()
    stable_again = only_send(m.poll())
    m.on_response(stable_again.request_id, JoinGroupResponse(error=Errors.NONE, generation_id=2, member_id="m-1",
                                                             leader="m-1", protocol_name="server-range"))
    (done,) = m.on_response(stale.request_id, commit_answer(Errors.ILLEGAL_GENERATION))
    assert done.outcome is CommitOutcome.REBALANCED  # type: ignore[union-attr]
    phase: Phase = m.phase
    assert m.generation.generation_id == 2 and phase is Phase.SYNCING  # generation 2 is untouched


@pytest.mark.parametrize("error", [Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
                                   Errors.COORDINATOR_LOAD_IN_PROGRESS])
def test_coordinator_errors_rediscover_keep_the_partitions_and_retry_the_round(error: ErrorCode) -> None:
    clock = ManualMs()
    m = machine(clock)
    stable(m, 1, T0)
    (lost,) = heartbeat(m, clock, error)
    assert isinstance(lost, CoordinatorLost) and m.stable and m.owned == {T0}
    assert m.time_to_next_heartbeat_ms() == TIMING.retry_backoff_ms  # retried after the backoff
    m.request_rejoin("test")
    m.poll()
    sent = only_send(m.poll())
    assert isinstance(m.on_response(sent.request_id, JoinGroupResponse(error=error))[0], CoordinatorLost)
    assert m.phase is Phase.UNJOINED and m.rejoin_reason == f"JoinGroup: {error.name}"
    again = only_send(m.poll())
    assert isinstance(m.on_request_failed(again.request_id)[0], CoordinatorLost)  # a dropped connection alike
    assert isinstance(only_send(m.poll()).request, JoinGroupRequest)


def test_a_sync_refused_with_rebalance_in_progress_rejoins() -> None:
    m = machine(ManualMs())
    sync = join(m, 1)
    assert m.on_response(sync.request_id, SyncGroupResponse(error=Errors.REBALANCE_IN_PROGRESS)) == []
    assert m.phase is Phase.UNJOINED and m.generation.generation_id == 1
    assert isinstance(only_send(m.poll()).request, JoinGroupRequest)


@pytest.mark.parametrize("error", [Errors.FENCED_INSTANCE_ID, Errors.INCONSISTENT_GROUP_PROTOCOL])
def test_fenced_instance_id_and_unexpected_errors_are_fatal(error: ErrorCode) -> None:
    clock = ManualMs()
    m = machine(clock, group_instance_id="i-1")
    stable(m, 1, T0)
    (failed,) = heartbeat(m, clock, error)
    assert failed == MemberFailed(error, "Heartbeat for group g") and m.failure == failed
    assert m.phase is Phase.FAILED and m.poll() == [] and m.on_time() == [] and m.leave("bye") == []


def test_commits_are_fenced_by_the_stable_generation_and_report_their_outcome() -> None:
    m = machine(ManualMs(), group_instance_id="i-1")
    offsets = {T1: OffsetAndMetadata(7, "meta", 3), T0: OffsetAndMetadata(5, "", -1)}
    early = m.commit(offsets)
    assert isinstance(early.request, OffsetCommitRequest)
    assert (early.request.generation_id, early.request.member_id, early.request.group_instance_id) == (-1, "", None)
    stable(m, 2, T0, T1)
    sent = m.commit(offsets)
    assert isinstance(sent.request, OffsetCommitRequest)
    assert (sent.request.generation_id, sent.request.member_id, sent.request.group_instance_id) == (2, "m-1", "i-1")
    assert [(p.partition, p.offset, p.leader_epoch, p.metadata) for p in sent.request.topics[0].partitions] == [
        (0, 5, -1, ""), (1, 7, 3, "meta")]
    (done,) = m.on_response(sent.request_id, commit_answer(Errors.NONE))
    assert done == CommitCompleted(sent.request_id, offsets, CommitOutcome.COMMITTED, Errors.NONE)
    retry = m.commit(offsets)
    lost, done = m.on_response(retry.request_id, commit_answer(Errors.NOT_COORDINATOR))
    assert isinstance(lost, CoordinatorLost) and done.outcome is CommitOutcome.RETRIABLE  # type: ignore[union-attr]
    fenced = m.commit(offsets)
    *_, done = m.on_response(fenced.request_id, commit_answer(Errors.UNKNOWN_MEMBER_ID))
    assert done.outcome is CommitOutcome.REBALANCED and m.generation.member_id == ""  # type: ignore[union-attr]


def test_heartbeats_follow_the_timer_one_at_a_time() -> None:
    clock = ManualMs()
    m = machine(clock)
    assert m.time_to_next_heartbeat_ms() is None and m.on_time() == []
    stable(m, 1, T0)
    assert m.time_to_next_heartbeat_ms() == TIMING.heartbeat_interval_ms and m.on_time() == []
    clock.now += TIMING.heartbeat_interval_ms
    sent = only_send(m.on_time())
    assert isinstance(sent.request, HeartbeatRequest) and (sent.request.generation_id, sent.request.member_id) == (
        1, "m-1")
    clock.now += TIMING.heartbeat_interval_ms
    assert m.on_time() == [] and m.time_to_next_heartbeat_ms() is None  # one heartbeat in flight at a time
    assert m.on_response(sent.request_id, HeartbeatResponse(error=Errors.NONE)) == []
    assert m.on_response(sent.request_id, HeartbeatResponse(error=Errors.NONE)) == []  # answered twice: ignored


def test_a_dynamic_member_that_stops_polling_leaves_and_loses_its_partitions() -> None:
    clock = ManualMs()
    m = machine(clock)
    stable(m, 1, T0)
    clock.now += TIMING.rebalance_timeout_ms + 1
    leave = only_send(m.on_time())
    assert isinstance(leave.request, LeaveGroupRequest) and leave.request.members[0].member_id == "m-1"
    assert m.phase is Phase.UNJOINED and m.generation.member_id == ""
    lost, rejoin = m.poll()
    assert lost == PartitionsLost(frozenset({T0})) and isinstance(rejoin, Send)


def test_a_static_member_that_stops_polling_rejoins_with_its_partitions() -> None:
    clock = ManualMs()
    m = machine(clock, group_instance_id="i-1")
    stable(m, 1, T0)
    clock.now += TIMING.rebalance_timeout_ms + 1
    assert m.on_time() == [] and m.phase is Phase.UNJOINED and m.generation.member_id == "m-1"
    assert m.poll() == [PartitionsRevoked(frozenset({T0}))]  # eager: revoked cleanly before the rejoin


def test_leaving_revokes_first_then_sends_leave_group_once() -> None:
    m = machine(ManualMs(), group_instance_id="i-1")
    stable(m, 1, T0)
    assert m.leave("closing") == [PartitionsRevoked(frozenset({T0}))]
    leave = only_send(m.leave("closing"))
    assert isinstance(leave.request, LeaveGroupRequest)
    assert leave.request.members[0].group_instance_id == "i-1" and leave.request.members[0].reason == "closing"
    assert m.phase is Phase.CLOSED and m.leave("closing") == [] and m.poll() == []
    assert m.on_response(leave.request_id, HeartbeatResponse(error=Errors.NONE)) == []
    quiet = machine(ManualMs(), group_instance_id="i-2", leave_on_close=False)
    stable(quiet, 1, T0)
    quiet.leave("closing")
    assert quiet.leave("closing") == []  # its session runs out instead


def test_auto_commit_commits_processed_offsets_on_its_interval_and_before_a_revocation() -> None:
    clock = ManualMs()
    m = machine(clock, auto_commit_interval_ms=500)
    stable(m, 1, T0, T1)
    m.mark_processed({T0: OffsetAndMetadata(3, "", -1), T1: OffsetAndMetadata(4, "", -1)})
    assert m.auto_commit_due() == {}
    clock.now += 500
    assert m.auto_commit_due() == {T0: OffsetAndMetadata(3, "", -1), T1: OffsetAndMetadata(4, "", -1)}
    assert m.auto_commit_due() == {}
    m.request_rejoin("test")
    before, revoked = m.poll()
    assert before == CommitBeforeRevoke({T0: OffsetAndMetadata(3, "", -1), T1: OffsetAndMetadata(4, "", -1)})
    assert revoked == PartitionsRevoked(frozenset({T0, T1})) and m.processed == {}


def test_the_module_docstrings_worked_example_runs() -> None:
    from groupcoord.member import protocol_machine

    assert doctest.testmod(protocol_machine, raise_on_error=True).attempted >= 15


def test_lose_after_session_timeout_drops_the_partitions_of_a_member_cut_off_from_the_coordinator() -> None:
    """librdkafka's rule (the simulator's members): no answer for a session timeout, the partitions are lost."""
    clock = ManualMs()
    m = machine(clock, lose_after_session_timeout=True)
    stable(m, 1, T0)
    clock.now += TIMING.heartbeat_interval_ms
    sent = only_send(m.on_time())
    clock.now += TIMING.session_timeout_ms  # the answer is read late, but it arrived in time
    m.on_response(sent.request_id, HeartbeatResponse(error=Errors.NONE), received_at_ms=clock.now - 9000)
    assert m.lost_partitions() == []
    clock.now += 9000
    assert m.lost_partitions() == [PartitionsLost(frozenset({T0}))]
    assert m.generation.generation_id == 1 and m.rejoin_reason is not None  # it rejoins in its generation
    assert isinstance(only_send(m.poll()).request, JoinGroupRequest)


def test_without_the_session_rule_a_member_keeps_its_partitions_while_the_coordinator_is_away() -> None:
    clock = ManualMs()
    m = machine(clock)
    stable(m, 1, T0)
    clock.now += 10 * TIMING.session_timeout_ms
    m.poll()
    assert m.lost_partitions() == [] and m.owned == {T0}


def test_a_poll_while_the_leader_was_assigning_starts_the_round_again() -> None:
    """The shell's assignor raised instead of calling ``assigned``: the next poll joins again."""
    m = machine(ManualMs(), protocols=("range",))
    sent = only_send(m.poll())
    m.on_response(sent.request_id, JoinGroupResponse(error=Errors.NONE, generation_id=1, member_id="m-1",
                                                     leader="m-1", protocol_name="range"))
    assert m.phase is Phase.ASSIGNING
    again = only_send(m.poll())
    assert isinstance(again.request, JoinGroupRequest) and again.request.reason == "the leader's assignment failed"


@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_an_assignment_outside_the_subscription_is_refused_and_the_member_rejoins(cooperative: bool) -> None:
    """Kafka's ConsumerCoordinator.onJoinComplete (issue 26): a static member came back subscribed to ``u`` and the
    coordinator handed back its old assignment of ``t`` unchanged. The member does not take it (no callback, it owns
    nothing of ``t``), stays in the generation, and rejoins at once with its current subscription."""
    clock = ManualMs()
    m = machine(clock, topics=("u",), cooperative=cooperative, group_instance_id="i-1",
                protocols=("server-cooperative-sticky",) if cooperative else ("server-range",))
    sync = join(m, 4, protocol=m.config.protocols[0])
    assert m.on_response(sync.request_id, SyncGroupResponse(error=Errors.NONE, assignment=assignment(T0, T1))) == []
    assert m.owned == frozenset() and m.phase is Phase.STABLE and not m.stable
    assert m.rejoin_reason == "received assignment does not match the current subscription"
    rejoin = only_send(m.poll())
    assert isinstance(rejoin.request, JoinGroupRequest) and rejoin.request.member_id == "m-1"
    assert decode_subscription(rejoin.request.protocols[0].metadata).topics == ("u",)
    sync = only_send(m.on_response(rejoin.request_id, JoinGroupResponse(
        error=Errors.NONE, generation_id=5, member_id="m-1", leader="m-1", protocol_name=m.config.protocols[0])))
    u0 = TopicPartition("u", 0)
    (assigned,) = m.on_response(sync.request_id, SyncGroupResponse(error=Errors.NONE, assignment=assignment(u0)))
    assert isinstance(assigned, PartitionsAssigned) and assigned.assignment == frozenset({u0}) and m.stable


def test_a_cooperative_member_keeps_what_it_owns_when_it_refuses_an_assignment() -> None:
    """The refusal changes nothing it owns: a cooperative member that owns t-0 (still subscribed) and is handed
    t-0 plus a partition of a topic it left keeps t-0, with no revocation, until its rejoin completes."""
    clock = ManualMs()
    m = machine(clock, topics=("t", "u"), cooperative=True, protocols=("server-cooperative-sticky",))
    stable(m, 1, T0)
    m.subscribe(["t"])
    rejoin = only_send(m.poll())
    assert isinstance(rejoin.request, JoinGroupRequest)
    sync = only_send(m.on_response(rejoin.request_id, JoinGroupResponse(
        error=Errors.NONE, generation_id=2, member_id="m-1", leader="m-1", protocol_name="server-cooperative-sticky")))
    stale = assignment(T0, TopicPartition("u", 0))
    assert m.on_response(sync.request_id, SyncGroupResponse(error=Errors.NONE, assignment=stale)) == []
    assert m.owned == frozenset({T0}) and m.rejoin_reason is not None
