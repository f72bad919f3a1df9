"""``group.consumer.assignment.interval.ms`` in the core: a consumer group's target assignment is computed at most once
per interval, as Kafka 4.4 does it (``canComputeNextTargetAssignment``); meanwhile the group is Assigning and its
members' heartbeats are answered at once against the current target. With 0 (groupcoord's default) every change is
assigned at once (the other consumer-group tests)."""

from __future__ import annotations

import dataclasses

from groupcoord.group.consumer_group import ConsumerGroupState
from groupcoord.log.memory import InMemoryRecordLog
from tests.narrowing import present

from .consumer_context import CONFIG, ConsumerGroupContext, T, parts

INTERVAL_MS = 1000


def test_a_change_within_the_interval_is_assigned_once_it_has_passed() -> None:
    """The first target is computed at once; b joins 100 ms later and is answered at once with nothing, the group
    Assigning; when the interval has passed the target comes, and b gets its share once a released it."""
    ctx = ConsumerGroupContext(InMemoryRecordLog(),
                               config=dataclasses.replace(CONFIG, consumer_group_assignment_interval_ms=INTERVAL_MS))
    a = ctx.join("a")
    assert dict(present(a.assignment)) == parts(T, 0, 1, 2, 3)
    ctx.sleep(100)
    b = ctx.join("b")
    assert b.member_epoch == a.member_epoch and not b.assignment
    group = present(ctx.coordinator.consumer_group("g"))
    assert group.state is ConsumerGroupState.ASSIGNING and not ctx.pending
    assert ctx.beat("a", a.member_epoch, parts(T, 0, 1, 2, 3)).assignment is None  # nothing moves yet
    ctx.sleep(INTERVAL_MS - 100)
    group = present(ctx.coordinator.consumer_group("g"))
    assert group.target_assignment_epoch == group.group_epoch and group.state is ConsumerGroupState.RECONCILING
    revoking = ctx.beat("a", a.member_epoch, parts(T, 0, 1, 2, 3))
    assert dict(present(revoking.assignment)) == parts(T, 0, 1)
    done = ctx.beat("a", revoking.member_epoch, parts(T, 0, 1))
    assert done.member_epoch == group.group_epoch
    assert dict(present(ctx.beat("b", b.member_epoch, {}).assignment)) == parts(T, 2, 3)
