"""The reconciliation of a consumer-group member towards its target assignment (KIP-848), as Kafka 4.4's
``CurrentAssignmentBuilder`` and ``GroupMetadataManager.maybeReconcile`` do it.

Given the member, the target assignment at the target epoch, the partitions the member reports it owns (``None``
when the heartbeat did not carry them) and who holds each partition now, :func:`reconcile` returns the member's next
state. Three rules make it safe:

1. **Revoke first.** When the member holds partitions that its target no longer gives it, it keeps its epoch, moves
   to UNREVOKED_PARTITIONS and keeps the rest; it moves on only once a heartbeat reports none of the revoked
   partitions (a heartbeat without owned partitions never counts as a report).
2. **Then the new epoch.** With nothing left to revoke the member moves to the target epoch.
3. **Only released partitions.** A target partition still held by another member (its epoch is not -1) is not
   assigned yet; the member is UNRELEASED_PARTITIONS until every such partition is free. A partition the member
   itself holds pending revocation counts as free for it.

Worked example (topic ``t``, target epoch 2). Member A (epoch 1) holds t-0, t-1; the new target gives A t-0 and
B t-1. A's heartbeat: t-1 must go, A stays at epoch 1 in UNREVOKED_PARTITIONS with t-0 assigned and t-1 pending.
B's join: t-1 is still held at epoch 1, so B moves to epoch 2 with nothing assigned, UNRELEASED_PARTITIONS. A reports
owning only t-0: A moves to epoch 2, STABLE, and t-1 is free. B's next heartbeat: B gets t-1 and is STABLE.

The target and the owned partitions are :data:`~groupcoord.group.consumer_member.TopicPartitions` (topic id ->
partitions). The caller resolves the member's subscribed topic names (and its resolved regex) to topic ids: a target
topic the member no longer subscribes to is treated as an empty target, as Kafka does with its metadata image.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from enum import Enum
from uuid import UUID

from groupcoord.coordinator.consumer_epochs import FENCED_MEMBER_EPOCH
from groupcoord.group.consumer_group import NO_OWNER_EPOCH
from groupcoord.group.consumer_member import (
    ConsumerGroupMember,
    MemberState,
    OwnedPartitions,
    PartitionEpochs,
    TopicPartitions,
)
from groupcoord.protocol.errors import ProtocolError

CurrentPartitionEpoch = Callable[[UUID, int], int]
"""Who holds a partition now: the member epoch of its holder, or -1 when nobody does
(:meth:`~groupcoord.group.consumer_group.ConsumerGroup.current_partition_epoch`)."""


def reconcile(
    member: ConsumerGroupMember,
    *,
    target_epoch: int,
    target: TopicPartitions,
    owned: OwnedPartitions | None,
    current_partition_epoch: CurrentPartitionEpoch,
    subscribed_topic_ids: Collection[UUID],
    has_subscription_changed: bool = False,
) -> ConsumerGroupMember:
    """The member's next state towards ``target`` at ``target_epoch`` (Kafka's ``CurrentAssignmentBuilder.build``).

    Returns ``member`` itself when it cannot move. ``has_subscription_changed`` says the member's subscription
    changed in this heartbeat: a STABLE member at the target epoch then drops the topics it no longer subscribes
    to at once, without waiting for a new target. Raises FENCED_MEMBER_EPOCH for a member in the UNKNOWN state
    that does not report owning nothing.
    """
    subscribed = frozenset(subscribed_topic_ids)
    if member.state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next_assignment(member, member.member_epoch, target_epoch, target, owned,
                                    current_partition_epoch, subscribed)
        if has_subscription_changed:
            return _drop_unsubscribed(member, owned, subscribed)
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation_with_epochs):
            return _drop_unsubscribed(member, owned, subscribed) if has_subscription_changed else member
        return _next_assignment(member, member.member_epoch, target_epoch, target, owned,
                                current_partition_epoch, subscribed)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, target_epoch, target, owned,
                                current_partition_epoch, subscribed)
    if owned is None or owned:
        raise ProtocolError(FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                                                 "The member must abandon all its partitions and rejoin.")
    return _next_assignment(member, target_epoch, target_epoch, target, owned, current_partition_epoch, subscribed)


class RebalanceTimer(Enum):
    """What a reconciliation asks of the member's rebalance timer (Kafka's ``maybeReconcile``)."""

    SCHEDULE = "schedule"
    """The member must revoke partitions: fence it if it is still at this epoch after its rebalance timeout."""
    CANCEL = "cancel"
    """The member has nothing (more) to revoke."""


@dataclass(frozen=True)
class Reconciliation:
    """The outcome of :func:`maybe_reconcile`: the member, whether it changed (a current-assignment record is
    due) and what to do with its rebalance timer (``None``: leave it)."""

    member: ConsumerGroupMember
    changed: bool
    rebalance_timer: RebalanceTimer | None


def maybe_reconcile(
    member: ConsumerGroupMember,
    *,
    target_epoch: int,
    target: TopicPartitions,
    owned: OwnedPartitions | None,
    current_partition_epoch: CurrentPartitionEpoch,
    subscribed_topic_ids: Collection[UUID],
    has_subscription_changed: bool = False,
) -> Reconciliation:
    """:func:`reconcile`, skipped for a member already STABLE at ``target_epoch`` whose subscription did not
    change; a changed member schedules its rebalance timer when it must revoke and cancels it otherwise."""
    if not has_subscription_changed and member.is_reconciled_to(target_epoch):
        return Reconciliation(member, changed=False, rebalance_timer=None)
    updated = reconcile(member, target_epoch=target_epoch, target=target, owned=owned,
                        current_partition_epoch=current_partition_epoch,
                        subscribed_topic_ids=subscribed_topic_ids, has_subscription_changed=has_subscription_changed)
    if updated == member:
        return Reconciliation(member, changed=False, rebalance_timer=None)
    timer = RebalanceTimer.SCHEDULE if updated.state is MemberState.UNREVOKED_PARTITIONS else RebalanceTimer.CANCEL
    return Reconciliation(updated, changed=True, rebalance_timer=timer)


def is_fenced_by_rebalance_timeout(member: ConsumerGroupMember | None, scheduled_epoch: int) -> bool:
    """True when a rebalance timeout scheduled at ``scheduled_epoch`` fences the member: it is still at that epoch,
    so it never finished revoking. A member that moved on, or is gone, is left alone."""
    return member is not None and member.member_epoch == scheduled_epoch


# --- the two ways a member moves (private) ---------------------------------------------------------------------

def _next_assignment(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: TopicPartitions,
    owned: OwnedPartitions | None,
    current_partition_epoch: CurrentPartitionEpoch,
    subscribed: frozenset[UUID],
) -> ConsumerGroupMember:
    """Kafka's ``computeNextAssignment``: revoke, else assign what is free at the target epoch."""
    assigned: dict[UUID, dict[int, int]] = {}
    revoking: dict[UUID, dict[int, int]] = {}
    to_assign: dict[UUID, set[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned_with_epochs):
        wanted = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
        current = member.assigned_with_epochs.get(topic_id, {})
        kept = {p: e for p, e in current.items() if p in wanted}
        gone = {p: e for p, e in current.items() if p not in wanted}
        pending_here = member.pending_revocation_with_epochs.get(topic_id, {})
        new: set[int] = set()
        for partition in wanted - kept.keys():
            if current_partition_epoch(topic_id, partition) != NO_OWNER_EPOCH and partition not in pending_here:
                unreleased = True
            else:
                new.add(partition)
        if kept:
            assigned[topic_id] = kept
        if gone:
            revoking[topic_id] = gone
        if new:
            to_assign[topic_id] = new

    if revoking and _owns_any(owned, revoking):
        return replace(member.moved_to_epoch(member_epoch), state=MemberState.UNREVOKED_PARTITIONS,
                       assigned_with_epochs=assigned, pending_revocation_with_epochs=revoking)
    for topic_id, partitions in to_assign.items():
        assigned.setdefault(topic_id, {}).update(dict.fromkeys(partitions, target_epoch))
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member.moved_to_epoch(target_epoch), state=state,
                   assigned_with_epochs=assigned, pending_revocation_with_epochs={})


def _drop_unsubscribed(
    member: ConsumerGroupMember, owned: OwnedPartitions | None, subscribed: frozenset[UUID],
) -> ConsumerGroupMember:
    """Kafka's ``updateCurrentAssignment``: move the topics the member no longer subscribes to out of its
    assignment, at its current epoch, without waiting for a new target."""
    assigned = member.assigned_with_epochs
    pending = member.pending_revocation_with_epochs
    if not subscribed and not pending:
        new_assigned: PartitionEpochs = {}
        new_pending: PartitionEpochs = assigned
    else:
        dropped = [topic_id for topic_id in assigned if topic_id not in subscribed]
        new_assigned = {t: e for t, e in assigned.items() if t not in dropped}
        merged = {t: dict(e) for t, e in pending.items()}
        for topic_id in dropped:
            merged.setdefault(topic_id, {}).update(assigned[topic_id])
        new_pending = merged
    if new_assigned == assigned:
        return member
    if new_pending and _owns_any(owned, new_pending):
        return replace(member.moved_to_epoch(member.member_epoch), state=MemberState.UNREVOKED_PARTITIONS,
                       assigned_with_epochs=new_assigned, pending_revocation_with_epochs=new_pending)
    return replace(member.moved_to_epoch(member.member_epoch), assigned_with_epochs=new_assigned)


def _owns_any(owned: OwnedPartitions | None, revoking: PartitionEpochs) -> bool:
    """True when the heartbeat still reports one of the partitions being revoked; a heartbeat that reports
    nothing (``None``) is taken as still owning them (Kafka's ``ownsRevokedPartitions``)."""
    if owned is None:
        return True
    return any(partition in revoking.get(topic_id, {}) for topic_id, partitions in owned.items()
               for partition in partitions)
