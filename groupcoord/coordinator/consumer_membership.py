"""What changes a consumer group (KIP-848) besides a heartbeat's own fields: a new group epoch and the target
assignment it needs, the shell's answer, reconciling a member against the target, fencing a member (a leave with
epoch -1, a session or rebalance timeout), and deleting an empty group. Each writes records through
:meth:`~groupcoord.coordinator.context.CoordinatorContext.append`; the group changes only by their replay.

The target assignment is computed outside the core, as for classic ``server-*`` groups: when the group epoch moves
ahead of the target's epoch the core emits :class:`~groupcoord.coordinator.effects.NeedsTargetAssignment` (once per
epoch) and the shell answers with :class:`~groupcoord.coordinator.effects.CompleteTargetAssignment`. Kafka computes
the target inside the heartbeat, so that every heartbeat answer is at the target of the current group epoch; here
the heartbeats that arrive while the group is Assigning wait (parked, as classic JoinGroups wait) and are answered
when the target is written, which gives the same answers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from uuid import UUID

from groupcoord.coordinator.consumer_migration import downgrade_allowed, downgrade_to_classic_group
from groupcoord.coordinator.consumer_reconciliation import (
    RebalanceTimer,
    is_fenced_by_rebalance_timeout,
    maybe_reconcile,
)
from groupcoord.coordinator.consumer_records import (
    member_tombstones,
    new_consumer_group_epoch_record,
    new_consumer_group_epoch_tombstone,
    new_current_assignment_record,
    new_member_metadata_record,
    new_target_epoch_record,
    new_target_epoch_tombstone,
    new_target_member_record,
    new_target_member_tombstone,
)
from groupcoord.coordinator.consumer_topics import group_topics, member_topics
from groupcoord.coordinator.context import (
    CoordinatorContext,
    Parked,
    ParkedClassicJoin,
    ParkedHeartbeat,
    consumer_assignment_key,
    consumer_join_key,
    consumer_rebalance_key,
    consumer_session_key,
    consumer_sync_key,
)
from groupcoord.coordinator.effects import (
    CompleteTargetAssignment,
    NeedsTargetAssignment,
    SubscribedTopic,
    TargetMember,
)
from groupcoord.coordinator.records import new_offset_tombstone
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import (
    ConsumerGroupMember,
    MemberState,
    has_assigned_partitions_changed,
    topic_partitions,
)
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.responses import ConsumerGroupHeartbeatResponse

log = logging.getLogger("groupcoord.coordinator.consumer")


# --- topics ----------------------------------------------------------------------------------------------------

def server_assignor(ctx: CoordinatorContext, group: ConsumerGroup) -> str:
    """The server assignor of ``group``: the one most members ask for, else the first configured."""
    return group.preferred_server_assignor() or ctx.config.consumer_group_assignors[0]


def subscribed_topic_ids(ctx: CoordinatorContext, member: ConsumerGroupMember) -> list[UUID]:
    """The ids of the topics ``member`` subscribes to (by name or by regex) that the coordinator knows (unknown
    names are skipped, as Kafka skips topics missing from its metadata image)."""
    return [ctx.topic_ids[name] for name in sorted(member_topics(ctx, member)) if name in ctx.topic_ids]


def _subscribed_topics(ctx: CoordinatorContext, group: ConsumerGroup) -> tuple[SubscribedTopic, ...]:
    counts = ctx.partition_counts or {}
    names = sorted(group_topics(ctx, group))
    return tuple(SubscribedTopic(topic_id=ctx.topic_ids[n], name=n, partitions=counts[n])
                 for n in names if n in ctx.topic_ids and n in counts)


# --- the group epoch and the target assignment -------------------------------------------------------------------

def bump_group_epoch(ctx: CoordinatorContext, group_id: str, reason: str) -> None:
    """Write the next group epoch (creating the group at epoch 1) and ask for its target assignment."""
    group = ctx.hard.consumer_group(group_id)
    epoch = (0 if group is None else group.group_epoch) + 1
    log.info("consumer group %s: epoch %d (%s)", group_id, epoch, reason)
    ctx.append(new_consumer_group_epoch_record(group_id, epoch))
    request_target(ctx, group_id)


def request_target(ctx: CoordinatorContext, group_id: str) -> None:
    """Make sure the target of the current group epoch is coming: written at once for a group without members,
    else asked of the shell once per epoch (an earlier failed or lost request is asked again), or, within
    ``group.consumer.assignment.interval.ms`` of the group's last target, once that interval has passed (Kafka's
    ``canComputeNextTargetAssignment``: the first target of a coordinator's term is never deferred)."""
    group = ctx.hard.consumer_group(group_id)
    if group is None or group.group_epoch <= group.target_assignment_epoch:
        return
    if ctx.partition_counts is None:
        return  # no topic metadata yet (a coordinator that just loaded): asked again with the first snapshot
    if not group.members:
        for member_id in sorted(group.target_assignment):
            ctx.append(new_target_member_tombstone(group_id, member_id))
        ctx.append(new_target_epoch_record(group_id, group.group_epoch))
        ctx.pending_targets.pop(group_id, None)
        return
    if ctx.pending_targets.get(group_id) == group.group_epoch:
        return
    last = ctx.last_targets_ms.get(group_id)
    interval = ctx.config.consumer_group_assignment_interval_ms
    if last is not None and interval > 0 and ctx.now_ms < last + interval:
        key = consumer_assignment_key(group_id)
        if ctx.timers.deadline(key) is None:
            ctx.timers.schedule(key, last + interval, lambda _at: request_target(ctx, group_id))
        return
    ctx.pending_targets[group_id] = group.group_epoch
    members = tuple(
        TargetMember(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                     subscribed_topic_names=tuple(sorted(member_topics(ctx, m))),
                     subscribed_topic_ids=tuple(subscribed_topic_ids(ctx, m)),
                     current_target=group.target_assignment_of(m.member_id))
        for _, m in sorted(group.members.items()))
    ctx.emit(NeedsTargetAssignment(group_id=group_id, group_epoch=group.group_epoch,
                                   assignor=server_assignor(ctx, group),
                                   members=members, topics=_subscribed_topics(ctx, group)))


def complete_target(ctx: CoordinatorContext, answer: CompleteTargetAssignment, now_ms: int) -> None:
    """Write the shell's target for the current group epoch and answer the heartbeats that waited for it; an
    answer for another epoch (the group moved on, or is gone) is dropped."""
    group = ctx.hard.consumer_group(answer.group_id)
    if group is None or answer.group_epoch != group.group_epoch:
        log.info("consumer group %s: dropping the target of epoch %d (group epoch now %s)", answer.group_id,
                 answer.group_epoch, None if group is None else group.group_epoch)
        return
    if ctx.pending_targets.get(answer.group_id) == answer.group_epoch:
        del ctx.pending_targets[answer.group_id]
    if group.target_assignment_epoch >= answer.group_epoch:
        return
    if answer.error.is_error:
        log.warning("consumer group %s: the target of epoch %d failed: %s", answer.group_id, answer.group_epoch,
                    answer.error.name)
        for parked in ctx.parked_heartbeats.pop(answer.group_id, []):
            fail_parked(ctx, parked, answer.error, "The target assignment could not be computed.")
        return
    assignment = answer.assignment or {}
    for member_id in sorted(group.members):
        target = topic_partitions(assignment.get(member_id, {}))
        if member_id not in group.target_assignment or dict(target) != dict(group.target_assignment_of(member_id)):
            ctx.append(new_target_member_record(group.group_id, member_id, target))
    for member_id in sorted(set(group.target_assignment) - set(group.members)):
        ctx.append(new_target_member_tombstone(group.group_id, member_id))
    ctx.append(new_target_epoch_record(group.group_id, answer.group_epoch))
    ctx.last_targets_ms[group.group_id] = now_ms
    release_parked(ctx, group.group_id, now_ms)


def target_is_coming(ctx: CoordinatorContext, group: ConsumerGroup) -> bool:
    """True when the shell computes the target of ``group``'s epoch now; false when it is written already, or
    deferred by ``group.consumer.assignment.interval.ms`` (a heartbeat then reconciles against the current target
    and is answered at once, as in Kafka)."""
    return ctx.pending_targets.get(group.group_id) == group.group_epoch > group.target_assignment_epoch


def release_parked(ctx: CoordinatorContext, group_id: str, now_ms: int) -> None:
    """Answer every heartbeat of ``group_id`` that waited for its target, in arrival order."""
    for parked in ctx.parked_heartbeats.pop(group_id, []):
        group = ctx.hard.consumer_group(group_id)
        if group is None or not group.has_member(parked.member_id):
            fail_parked(ctx, parked, Errors.UNKNOWN_MEMBER_ID,
                        f"Member {parked.member_id} is not a member of group {group_id}.")
            continue
        try:
            if isinstance(parked, ParkedClassicJoin):
                parked.answer(now_ms)
            else:
                reconcile_and_respond(ctx, group, parked, now_ms)
        except ProtocolError as exc:
            fail_parked(ctx, parked, exc.error, exc.message or None)


def fail_parked(ctx: CoordinatorContext, parked: Parked, error: ErrorCode, message: str | None) -> None:
    """Answer a parked heartbeat or classic JoinGroup with ``error``."""
    if isinstance(parked, ParkedClassicJoin):
        parked.fail(error, message)
    else:
        ctx.respond(parked.token, heartbeat_error(error, message))


def heartbeat_error(error: ErrorCode, message: str | None) -> ConsumerGroupHeartbeatResponse:
    """A heartbeat answered with ``error``."""
    return ConsumerGroupHeartbeatResponse(error=error, error_message=message)


# --- reconciliation and the member's timers ----------------------------------------------------------------------

def reconcile_and_respond(ctx: CoordinatorContext, group: ConsumerGroup, heartbeat: ParkedHeartbeat,
                          now_ms: int) -> None:
    """Move the member towards its target (a current-assignment record when it moves), set its rebalance timer,
    and answer the heartbeat, with the assignment when it changed or the request was a full one."""
    member = group.members[heartbeat.member_id]
    reconciliation = maybe_reconcile(
        member, target_epoch=group.target_assignment_epoch, target=group.target_assignment_of(member.member_id),
        owned=heartbeat.request.topic_partitions, current_partition_epoch=group.current_partition_epoch,
        subscribed_topic_ids=subscribed_topic_ids(ctx, member),
        has_subscription_changed=heartbeat.subscription_changed)
    final = reconciliation.member
    if reconciliation.changed:
        ctx.append(new_current_assignment_record(group.group_id, final))
    if reconciliation.rebalance_timer is RebalanceTimer.SCHEDULE:
        schedule_rebalance_timeout(ctx, group.group_id, final, now_ms)
    elif reconciliation.rebalance_timer is RebalanceTimer.CANCEL:
        ctx.timers.cancel(consumer_rebalance_key(group.group_id, final.member_id))
    sends = heartbeat.request.is_full or has_assigned_partitions_changed(heartbeat.before, final)
    ctx.respond(heartbeat.token, ConsumerGroupHeartbeatResponse(
        error=Errors.NONE, member_id=final.member_id, member_epoch=final.member_epoch,
        heartbeat_interval_ms=ctx.config.consumer_group_heartbeat_interval_ms,
        assignment=dict(final.assigned_partitions) if sends else None))


def schedule_session_timeout(ctx: CoordinatorContext, group_id: str, member_id: str, now_ms: int) -> None:
    """(Re)start the member's session: it is fenced if no heartbeat comes within the session timeout (the
    group's for a member of the consumer protocol, its own for a member of the classic protocol)."""
    def expire(fired_ms: int) -> None:
        group = ctx.hard.consumer_group(group_id)
        if group is not None and group.has_member(member_id):
            log.info("consumer group %s: member %s's session expired", group_id, member_id)
            fence_member(ctx, group, member_id, fired_ms)

    group = ctx.hard.consumer_group(group_id)
    member = None if group is None else group.member(member_id)
    classic = None if member is None else member.classic
    timeout_ms = ctx.config.consumer_group_session_timeout_ms if classic is None else classic.session_timeout_ms
    ctx.timers.schedule(consumer_session_key(group_id, member_id), now_ms + timeout_ms, expire)


def schedule_rebalance_timeout(ctx: CoordinatorContext, group_id: str, member: ConsumerGroupMember,
                               now_ms: int) -> None:
    """Fence the member if it is still at its current epoch (it never finished revoking) after its rebalance
    timeout."""
    member_id, epoch = member.member_id, member.member_epoch

    def expire(fired_ms: int) -> None:
        group = ctx.hard.consumer_group(group_id)
        current = None if group is None else group.member(member_id)
        if group is not None and is_fenced_by_rebalance_timeout(current, epoch):
            log.info("consumer group %s: member %s did not revoke within its rebalance timeout", group_id, member_id)
            fence_member(ctx, group, member_id, fired_ms)

    ctx.timers.schedule(consumer_rebalance_key(group_id, member_id), now_ms + max(member.rebalance_timeout_ms, 0),
                        expire)


def cancel_member_timers(ctx: CoordinatorContext, group_id: str, member_id: str) -> None:
    """Stop the member's session and rebalance timers (and a classic member's join and sync timers)."""
    ctx.timers.cancel(consumer_session_key(group_id, member_id))
    ctx.timers.cancel(consumer_rebalance_key(group_id, member_id))
    ctx.timers.cancel(consumer_join_key(group_id, member_id))
    ctx.timers.cancel(consumer_sync_key(group_id, member_id))


# --- metadata and load ------------------------------------------------------------------------------------------

def on_consumer_metadata_change(ctx: CoordinatorContext, previous_counts: Mapping[str, int] | None,
                                previous_ids: Mapping[str, UUID]) -> None:
    """After a new metadata snapshot (already in ``ctx``): a group subscribed to a topic whose partition count or
    id changed moves to a new group epoch; the first snapshot asks for the targets a load left waiting."""
    if previous_counts is None:
        for group_id in ctx.hard.consumer_group_ids():
            group = ctx.hard.consumer_group(group_id)
            if group is not None and target_misses_partitions(ctx, group):
                bump_group_epoch(ctx, group_id, "its target does not cover its topics' partitions (a metadata change "
                                                "lost in a failover)")
            else:
                request_target(ctx, group_id)
        return
    counts = ctx.partition_counts or {}
    changed = {t for t in set(previous_counts) | set(counts)
               if previous_counts.get(t) != counts.get(t) or previous_ids.get(t) != ctx.topic_ids.get(t)}
    for group_id in ctx.hard.consumer_group_ids():
        group = ctx.hard.consumer_group(group_id)
        # A topic a regex matched before the change (now gone) or matches after it (new) counts too.
        if group is not None and changed & (group_topics(ctx, group) | group_topics(ctx, group, previous_ids)):
            bump_group_epoch(ctx, group_id, "the metadata of its topics changed")


def target_misses_partitions(ctx: CoordinatorContext, group: ConsumerGroup) -> bool:
    """True when ``group`` has members and a current target, but the target does not hand out exactly the
    partitions of the topics its members subscribe to, as the metadata counts them now.

    The group keeps no record of the metadata its target was computed with (Kafka keeps a hash of it with the
    group epoch, KIP-1101), so a coordinator's first metadata snapshot, which has nothing to compare with, asks the
    target itself: every server assignor hands out every partition of the subscribed topics. A partition count
    (or topic id) that changed while a failed coordinator was bumping the epoch for it would otherwise be lost and
    the new partitions stay unowned (simulator seed 20117; the classic groups' seed 968)."""
    if not group.members or group.group_epoch > group.target_assignment_epoch:
        return False
    counts = ctx.partition_counts or {}
    held: dict[UUID, set[int]] = {}
    for partitions in group.target_assignment.values():
        for topic_id, ids in partitions.items():
            held.setdefault(topic_id, set()).update(ids)
    for name in sorted(group_topics(ctx, group)):
        known = ctx.topic_ids.get(name)
        if known is not None and name in counts and held.get(known, set()) != set(range(counts[name])):
            return True
    return False


def load_consumer_groups(ctx: CoordinatorContext, now_ms: int) -> None:
    """After a load: every member's session starts now, a member still revoking gets its rebalance timeout again,
    and a group left Assigning asks for its target (once topic metadata is known)."""
    ctx.parked_heartbeats.clear()
    for group_id in ctx.hard.consumer_group_ids():
        group = ctx.hard.consumer_group(group_id)
        assert group is not None
        for member in group.members.values():
            schedule_session_timeout(ctx, group_id, member.member_id, now_ms)
            if member.state is MemberState.UNREVOKED_PARTITIONS and not member.uses_classic_protocol:
                schedule_rebalance_timeout(ctx, group_id, member, now_ms)
        request_target(ctx, group_id)


# --- members leaving, groups going -------------------------------------------------------------------------------

def remove_member_records(ctx: CoordinatorContext, group: ConsumerGroup, member_id: str) -> None:
    """The member's tombstones in Kafka's order (:func:`member_tombstones`); and its timers stop."""
    for record in member_tombstones(group, member_id):
        ctx.append(record)
    cancel_member_timers(ctx, group.group_id, member_id)


def replace_static_member(ctx: CoordinatorContext, group: ConsumerGroup, old: ConsumerGroupMember,
                           new: ConsumerGroupMember) -> None:
    """A static member's new incarnation takes the old one's place, target and assignment; the group epoch stays
    (Kafka's ``replaceMember``)."""
    target = dict(group.target_assignment_of(old.member_id))
    had_target = old.member_id in group.target_assignment
    remove_member_records(ctx, group, old.member_id)
    ctx.append(new_member_metadata_record(group.group_id, new))
    if had_target:
        ctx.append(new_target_member_record(group.group_id, new.member_id, target))
    ctx.append(new_current_assignment_record(group.group_id, new))


def fence_member(ctx: CoordinatorContext, group: ConsumerGroup, member_id: str, now_ms: int) -> None:
    """Remove the member (a leave with epoch -1, or a timeout) and bump the group epoch (see
    :func:`fence_members`)."""
    fence_members(ctx, group, [member_id], now_ms)


def fence_members(ctx: CoordinatorContext, group: ConsumerGroup, member_ids: list[str], now_ms: int) -> None:
    """Remove the members and bump the group epoch once (Kafka's ``consumerGroupFenceMembers``); when only
    members of the classic protocol would remain and the migration policy allows it, the group becomes a classic
    group instead (the online downgrade)."""
    if not member_ids:
        return
    if downgrade_allowed(ctx, group, frozenset(member_ids)):
        for member_id in group.members:
            cancel_member_timers(ctx, group.group_id, member_id)
        downgrade_to_classic_group(ctx, group, frozenset(member_ids), now_ms)
        return
    for member_id in member_ids:
        remove_member_records(ctx, group, member_id)
    bump_group_epoch(ctx, group.group_id, f"member {', '.join(member_ids)} left")
    release_if_settled(ctx, group.group_id, now_ms)


def release_if_settled(ctx: CoordinatorContext, group_id: str, now_ms: int) -> None:
    """Answer the parked heartbeats of a group whose target caught up without the shell (no members left)."""
    group = ctx.hard.consumer_group(group_id)
    if group is not None and group.group_epoch <= group.target_assignment_epoch:
        release_parked(ctx, group_id, now_ms)


def park(ctx: CoordinatorContext, group_id: str, parked: Parked) -> None:
    """Keep a heartbeat (or a classic member's JoinGroup) until its group's target is written."""
    ctx.parked_heartbeats.setdefault(group_id, []).append(parked)


def delete_consumer_group(ctx: CoordinatorContext, group: ConsumerGroup, *, with_offsets: bool) -> None:
    """Tombstone an empty consumer group: with its offsets for DeleteGroups, without them when a classic join
    converts it (the offsets then belong to the classic group, as in Kafka)."""
    if with_offsets:
        for topic, partition in sorted(ctx.hard.offsets(group.group_id)):
            ctx.append(new_offset_tombstone(group.group_id, topic, partition))
    group_id = group.group_id
    for member_id in sorted(group.target_assignment):
        ctx.append(new_target_member_tombstone(group_id, member_id))
    ctx.append(new_target_epoch_tombstone(group_id))
    ctx.append(new_consumer_group_epoch_tombstone(group_id))
    ctx.pending_targets.pop(group_id, None)
    ctx.last_targets_ms.pop(group_id, None)
    ctx.timers.cancel(consumer_assignment_key(group_id))
    ctx.parked_heartbeats.pop(group_id, None)

