"""A warning for rebalances that outlive their timeout, naming what the group still waits for.

A group normally leaves PreparingRebalance and CompletingRebalance within its rebalance timeout: the join and sync
timers end both phases, joined or not. Two waits are not bounded by them: the join phase is extended for static
members that did not rejoin, and a ``server-<assignor>`` group waits in CompletingRebalance for as long as the shell
takes to compute its assignment. When a group is still in the phase it entered one rebalance timeout ago, this logs
one WARNING line naming the members (or the assignment) it is waiting for, and again after each further timeout.
"""

from __future__ import annotations

import logging

from groupcoord.coordinator.context import CoordinatorContext, overdue_key
from groupcoord.group.group import ClassicGroup, is_server_side
from groupcoord.group.state import GroupState

log = logging.getLogger("groupcoord.coordinator.overdue")

_WATCHED = (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE)


def watch_phase(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int) -> None:
    """Start watching the phase ``group`` has just entered (PreparingRebalance or CompletingRebalance)."""
    timeout = group.rebalance_timeout_ms
    if not group.is_in(*_WATCHED) or timeout <= 0:
        return
    group_id, state, entered = group.group_id, group.state, group.state_timestamp_ms
    ctx.timers.schedule(overdue_key(group_id), now_ms + timeout,
                        lambda at: _on_overdue(ctx, group_id, state, entered, at))


def waiting_for(group: ClassicGroup) -> str:
    """What the group's current phase still waits for, in words."""
    if group.is_in(GroupState.PREPARING_REBALANCE):
        missing = [m.member_id for m in group.not_yet_rejoined()] + list(group.pending_members)
        return f"JoinGroup from {sorted(missing)}"
    if group.pending_sync_members:
        return f"SyncGroup from {sorted(group.pending_sync_members)}"
    if is_server_side(group.protocol_name):
        return f"the server-side assignment ({group.protocol_name}) of generation {group.generation_id}"
    return f"the leader {group.leader_id}'s assignment"


def _on_overdue(ctx: CoordinatorContext, group_id: str, state: GroupState, entered_ms: int, now_ms: int) -> None:
    group = ctx.groups.get(group_id)
    if group is None or group.state is not state or group.state_timestamp_ms != entered_ms:
        return  # the phase ended, or a new one started (and is watched on its own)
    log.warning("group %s: %s for %d ms, longer than its rebalance timeout (%d ms); waiting for %s", group_id,
                state.value, now_ms - entered_ms, group.rebalance_timeout_ms, waiting_for(group))
    watch_phase(ctx, group, now_ms)
