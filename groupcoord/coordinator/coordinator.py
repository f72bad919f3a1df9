"""The group coordinator: one object, single-threaded, pure. Requests, timers and shell answers go in;
records, responses and effects come out (:class:`~groupcoord.coordinator.result.CoordinatorResult`).

Two kinds of method, as in Kafka's new group coordinator:

* handlers (:meth:`GroupCoordinator.handle`, :meth:`consumer_group_heartbeat`, :meth:`advance`,
  :meth:`complete_assignment`, :meth:`complete_target_assignment`, :meth:`on_metadata_change`,
  :meth:`expire_offsets`) build records and responses; every record is replayed at once, so a result's records
  are already part of the hard state;
* :meth:`GroupCoordinator.replay` applies one record, live or while loading a log: the only writer of hard state.

Two group types, as in Kafka 4.4: classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and consumer groups
(KIP-848: ConsumerGroupHeartbeat; :mod:`groupcoord.coordinator.consumer_heartbeat`). A consumer group is hard state
whole (epochs, members, target and current assignments); only its timers and waiting heartbeats are soft.

Hard state is what the log keeps: each classic group's last completed generation (members, generation, leader,
protocol, assignment), each consumer group, and the committed offsets. A classic rebalance in progress is soft, as
in Kafka's classic coordinator: after a failure the group comes back at its last completed generation, and members
of a half-done rebalance rejoin (seed 004, "Handling Coordinator Failures"). Timers and parked requests are soft
and rebuilt by :meth:`on_loaded`.

Responses must be sent only after the result's records are durable. Every entry point first fires the timers
due at ``now_ms``, so state at ``now_ms`` always reflects them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from groupcoord.coordinator import admin, credentials, offsets
from groupcoord.coordinator.acls import handle_alter_acls
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.consumer_classic import (
    handle_classic_heartbeat,
    handle_classic_join,
    handle_classic_leave,
    handle_classic_sync,
)
from groupcoord.coordinator.consumer_describe import handle_consumer_describe
from groupcoord.coordinator.consumer_heartbeat import handle_consumer_heartbeat
from groupcoord.coordinator.consumer_membership import (
    complete_target,
    delete_consumer_group,
    heartbeat_error,
    load_consumer_groups,
    on_consumer_metadata_change,
)
from groupcoord.coordinator.consumer_offsets import (
    expire_consumer_offsets,
    handle_consumer_offset_commit,
    handle_consumer_offset_delete,
    handle_consumer_offset_fetch,
)
from groupcoord.coordinator.context import (
    OFFSETS_EXPIRATION_KEY,
    CoordinatorContext,
    MemberIdFactory,
    random_member_id,
)
from groupcoord.coordinator.effects import CompleteAssignment, CompleteTargetAssignment, EffectAnswer
from groupcoord.coordinator.hard_state import HardState, TopicPartition
from groupcoord.coordinator.heartbeat import handle_heartbeat
from groupcoord.coordinator.join import handle_join
from groupcoord.coordinator.leave import handle_leave
from groupcoord.coordinator.rebalance import heartbeat, maybe_prepare_rebalance
from groupcoord.coordinator.records import OffsetValue, Record
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.coordinator.sync import complete_assignment, handle_sync
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.group import ClassicGroup
from groupcoord.group.member import Token
from groupcoord.group.state import GroupState
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.requests import (
    AlterAclsRequest,
    AlterCredentialsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    GroupRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from groupcoord.protocol.responses import (
    AclResult,
    AlterAclsResponse,
    AlterCredentialsResponse,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DeletedGroup,
    DeleteGroupsResponse,
    DescribedConsumerGroup,
    DescribedGroup,
    DescribeGroupsResponse,
    GroupResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
    UserResult,
)
from groupcoord.security.acl_store import AclStore
from groupcoord.security.credentials import Credentials

log = logging.getLogger("groupcoord.coordinator")

Handler = Callable[[CoordinatorContext, Any, int, Token], None]

_HANDLERS: Mapping[type, Handler] = {
    JoinGroupRequest: handle_join,
    SyncGroupRequest: handle_sync,
    HeartbeatRequest: handle_heartbeat,
    LeaveGroupRequest: handle_leave,
    OffsetCommitRequest: offsets.handle_offset_commit,
    OffsetFetchRequest: offsets.handle_offset_fetch,
    OffsetDeleteRequest: offsets.handle_offset_delete,
    DescribeGroupsRequest: admin.handle_describe,
    ListGroupsRequest: admin.handle_list,
    DeleteGroupsRequest: admin.handle_delete,
    AlterCredentialsRequest: credentials.handle_alter,
    AlterAclsRequest: handle_alter_acls,
    ConsumerGroupHeartbeatRequest: handle_consumer_heartbeat,
    ConsumerGroupDescribeRequest: handle_consumer_describe,
}

ConsumerHandler = Callable[[CoordinatorContext, ConsumerGroup, Any, int, Token], None]

_CONSUMER_GROUP_HANDLERS: Mapping[type, ConsumerHandler] = {
    OffsetCommitRequest: handle_consumer_offset_commit,
    OffsetFetchRequest: handle_consumer_offset_fetch,
    OffsetDeleteRequest: handle_consumer_offset_delete,
    JoinGroupRequest: handle_classic_join,
    SyncGroupRequest: handle_classic_sync,
    HeartbeatRequest: handle_classic_heartbeat,
    LeaveGroupRequest: handle_classic_leave,
}
"""The offset APIs and the classic protocol's APIs when their group is a consumer group (KIP-848): members of the
classic protocol in a consumer group (:mod:`groupcoord.coordinator.consumer_classic`). A JoinGroup to a consumer group
without members converts it to a classic group instead."""


def error_response(request: GroupRequest, error: ErrorCode) -> GroupResponse:
    """The response to ``request`` failing as a whole with ``error`` (the one mapper from errors to responses)."""
    if isinstance(request, JoinGroupRequest):
        echo = request.member_id if error in (Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID) else ""
        return JoinGroupResponse(error=error, member_id=echo)
    if isinstance(request, SyncGroupRequest):
        return SyncGroupResponse(error=error)
    if isinstance(request, HeartbeatRequest):
        return HeartbeatResponse(error=error)
    if isinstance(request, LeaveGroupRequest):
        return LeaveGroupResponse(error=error)
    if isinstance(request, OffsetCommitRequest):
        return offsets.commit_error_response(request, error)
    if isinstance(request, OffsetFetchRequest):
        return OffsetFetchResponse(error=error)
    if isinstance(request, OffsetDeleteRequest):
        return OffsetDeleteResponse(error=error)
    if isinstance(request, DescribeGroupsRequest):
        return DescribeGroupsResponse(groups=tuple(
            DescribedGroup(error=error, group_id=g, state=GroupState.DEAD.value) for g in request.groups))
    if isinstance(request, ListGroupsRequest):
        return ListGroupsResponse(error=error)
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return ConsumerGroupHeartbeatResponse(error=error)
    if isinstance(request, ConsumerGroupDescribeRequest):
        return ConsumerGroupDescribeResponse(groups=tuple(
            DescribedConsumerGroup(error=error, group_id=g) for g in request.groups))
    if isinstance(request, AlterAclsRequest):
        return AlterAclsResponse(created=tuple(AclResult(error) for _ in request.creations),
                                 deleted=tuple(AclResult(error) for _ in request.deletions))
    if isinstance(request, AlterCredentialsRequest):
        users = dict.fromkeys(change.user for change in request.changes)
        return AlterCredentialsResponse(tuple(UserResult(user, error) for user in users))
    return DeleteGroupsResponse(results=tuple(DeletedGroup(g, error) for g in request.groups))


class GroupCoordinator:
    """Kafka's classic group coordinator as a replayable state machine.

    ``member_id_factory`` makes new member ids (``<client or instance id>-<uuid>`` by default); tests inject a
    deterministic one. Member ids reach the log inside records, so replay never calls it.
    """

    def __init__(self, config: CoordinatorConfig | None = None, *,
                 member_id_factory: MemberIdFactory = random_member_id) -> None:
        self._ctx = CoordinatorContext(config or CoordinatorConfig(), member_id_factory)
        self._now_ms: int | None = None

    @property
    def config(self) -> CoordinatorConfig:
        """The configuration in force."""
        return self._ctx.config

    # --- handlers ----------------------------------------------------------------------------------------------
    def handle(self, request: GroupRequest, now_ms: int, token: Token) -> CoordinatorResult:
        """Handle one request at ``now_ms``; its response (or a parked one's) is tagged with ``token``."""
        self._fire_timers(now_ms)
        handler = _HANDLERS.get(type(request))
        if handler is None:
            raise TypeError(f"not a group request: {type(request).__name__}")
        try:
            consumer_handler = _CONSUMER_GROUP_HANDLERS.get(type(request))
            consumer_group = self._ctx.hard.consumer_group(getattr(request, "group_id", ""))
            if isinstance(request, JoinGroupRequest) and consumer_group is not None and not consumer_group.members:
                # An empty consumer group becomes classic (its offsets stay, as with Kafka's default policy).
                delete_consumer_group(self._ctx, consumer_group, with_offsets=False)
                consumer_group = None
            if consumer_handler is not None and consumer_group is not None:
                consumer_handler(self._ctx, consumer_group, request, now_ms, token)
            else:
                handler(self._ctx, request, now_ms, token)
        except ProtocolError as exc:
            log.debug("%s rejected: %s", type(request).__name__, exc)
            if isinstance(request, ConsumerGroupHeartbeatRequest):
                self._ctx.respond(token, heartbeat_error(exc.error, exc.message or None))
            else:
                self._ctx.respond(token, error_response(request, exc.error))
        return self._ctx.drain()

    def consumer_group_heartbeat(self, request: ConsumerGroupHeartbeatRequest, now_ms: int,
                                 token: Token) -> CoordinatorResult:
        """Handle one ConsumerGroupHeartbeat (KIP-848) at ``now_ms``: the same as :meth:`handle`, named.

        The answer comes in this result, or, when the group waits for its target assignment, in the result of
        the :meth:`complete_target_assignment` call that provides it (tagged with ``token`` either way).
        """
        return self.handle(request, now_ms, token)

    def complete_target_assignment(self, answer: CompleteTargetAssignment, now_ms: int) -> CoordinatorResult:
        """The shell's answer to a ``NeedsTargetAssignment`` effect; an answer for another group epoch is dropped."""
        self._fire_timers(now_ms)
        complete_target(self._ctx, answer, now_ms)
        return self._ctx.drain()

    def advance(self, now_ms: int) -> CoordinatorResult:
        """Fire every timer due at ``now_ms`` (session expiry, join and sync deadlines, offset expiry)."""
        self._fire_timers(now_ms)
        return self._ctx.drain()

    def complete(self, answer: EffectAnswer, now_ms: int) -> CoordinatorResult:
        """The shell's answer to any effect: :meth:`complete_assignment` or :meth:`complete_target_assignment`."""
        if isinstance(answer, CompleteAssignment):
            return self.complete_assignment(answer, now_ms)
        return self.complete_target_assignment(answer, now_ms)

    def complete_assignment(self, answer: CompleteAssignment, now_ms: int) -> CoordinatorResult:
        """The shell's answer to a ``NeedsAssignment`` effect; a stale generation's answer is dropped."""
        self._fire_timers(now_ms)
        complete_assignment(self._ctx, answer, now_ms)
        return self._ctx.drain()

    def on_metadata_change(self, partition_counts: Mapping[str, int], now_ms: int, *,
                           topic_ids: Mapping[str, UUID] | None = None) -> CoordinatorResult:
        """New partition counts (and, when given, topic ids) for every topic: Stable classic groups subscribed to
        a changed topic rebalance; consumer groups subscribed to one move to a new group epoch."""
        self._fire_timers(now_ms)
        previous_counts, previous_ids = self._ctx.partition_counts, dict(self._ctx.topic_ids)
        if topic_ids is not None:
            self._ctx.topic_ids = dict(topic_ids)
        admin.on_metadata_change(self._ctx, partition_counts, now_ms)
        on_consumer_metadata_change(self._ctx, previous_counts, previous_ids)
        return self._ctx.drain()

    def expire_offsets(self, now_ms: int) -> CoordinatorResult:
        """Drop expired offsets and the Empty groups left without offsets now (also runs on a timer)."""
        self._fire_timers(now_ms)
        offsets.expire_offsets(self._ctx, now_ms)
        expire_consumer_offsets(self._ctx, now_ms)
        return self._ctx.drain()

    def next_deadline(self) -> int | None:
        """When the next timer fires (the shell may sleep until then)."""
        return self._ctx.timers.next_deadline()

    def timer_keys(self) -> list[str]:
        """Scheduled timer keys, sorted (for tests and diagnostics)."""
        return self._ctx.timers.keys()

    def _fire_timers(self, now_ms: int) -> None:
        self._ensure_expiration_timer(now_ms)
        while (due := self._ctx.timers.pop_due(now_ms)) is not None:
            deadline, op = due
            self._ctx.now_ms = deadline
            op(deadline)
        self._ctx.now_ms = now_ms
        self._now_ms = now_ms if self._now_ms is None else max(self._now_ms, now_ms)

    def _ensure_expiration_timer(self, now_ms: int) -> None:
        if self._ctx.timers.deadline(OFFSETS_EXPIRATION_KEY) is None:
            interval = self._ctx.config.offsets_retention_check_interval_ms
            self._ctx.timers.schedule(OFFSETS_EXPIRATION_KEY, now_ms + interval, self._on_expiration_timer)

    def _on_expiration_timer(self, now_ms: int) -> None:
        offsets.expire_offsets(self._ctx, now_ms)
        expire_consumer_offsets(self._ctx, now_ms)
        interval = self._ctx.config.offsets_retention_check_interval_ms
        self._ctx.timers.schedule(OFFSETS_EXPIRATION_KEY, now_ms + interval, self._on_expiration_timer)

    # --- replay and load ---------------------------------------------------------------------------------------
    def replay(self, record: Record) -> None:
        """Apply one record to hard state (forgiving for stale tombstones, raising on broken invariants)."""
        self._ctx.hard.replay(record)

    def on_loaded(self, now_ms: int) -> CoordinatorResult:
        """After replaying a log: rebuild live groups and timers from hard state.

        A group with a persisted generation comes back Stable with its members and assignment, and every session
        restarts at ``now_ms``; a group without members (or with offsets only) comes back Empty.
        """
        ctx = self._ctx
        ctx.timers.clear()
        ctx.groups.clear()
        for group_id in ctx.hard.group_ids():
            value = ctx.hard.group(group_id)
            group = (ClassicGroup(group_id, now_ms=now_ms) if value is None
                     else ClassicGroup.from_metadata_value(group_id, value))
            ctx.register_group(group)
            for member in group.members.values():
                heartbeat(ctx, group, member, now_ms)
            if group.size > ctx.config.group_max_size:
                maybe_prepare_rebalance(ctx, group, now_ms, "more members than group.max.size after load")
        load_consumer_groups(ctx, now_ms)
        self._ensure_expiration_timer(now_ms)
        return ctx.drain()

    def snapshot_records(self) -> list[Record]:
        """Records that rebuild the current hard state from nothing."""
        return self._ctx.hard.snapshot_records()

    @property
    def acls(self) -> AclStore:
        """The ACL bindings (read-only: only replay changes them); the authorizer checks requests with them."""
        return self._ctx.hard.acls

    @property
    def credentials(self) -> Credentials:
        """The users' credentials (read-only: only replay changes them); the endpoint authenticates with them."""
        return self._ctx.hard.credentials

    def hard_state(self) -> HardState:
        """A comparable value of all hard state."""
        return self._ctx.hard.snapshot()

    # --- read-only views (tests, CLI, demo) --------------------------------------------------------------------
    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group ``group_id``. Callers must treat it as read-only."""
        return self._ctx.groups.get(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group ``group_id`` (KIP-848). Callers must treat it as read-only."""
        return self._ctx.hard.consumer_group(group_id)

    def consumer_group_ids(self) -> list[str]:
        """Consumer group ids, sorted."""
        return self._ctx.hard.consumer_group_ids()

    def group_ids(self) -> list[str]:
        """Live group ids, sorted."""
        return sorted(self._ctx.groups)

    def committed_offsets(self, group_id: str) -> Mapping[TopicPartition, OffsetValue]:
        """The committed offsets of ``group_id``, classic or consumer group (a read-only view)."""
        return self._ctx.hard.offsets(group_id)
