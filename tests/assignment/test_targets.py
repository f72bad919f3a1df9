"""Consumer groups' target assignments (KIP-848) through the assignment runner, on the assignors' Python engine.

The core names topics by id and the assignors by name: the runner must hand each member every partition of the
topics it subscribes to that exist, keep the current target where a sticky assignor can, and answer by topic id.
"""

from __future__ import annotations

import uuid

from groupcoord.assignment.runner import driver_only_runner
from groupcoord.assignment.targets import target_group
from groupcoord.coordinator.effects import NeedsTargetAssignment, SubscribedTopic, TargetMember
from groupcoord.protocol.errors import Errors

ORDERS, EVENTS, GONE = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
TOPICS = (SubscribedTopic(topic_id=ORDERS, name="orders", partitions=4),
          SubscribedTopic(topic_id=EVENTS, name="events", partitions=2))


def _member(member_id: str, *topics: str, target: dict[uuid.UUID, frozenset[int]] | None = None) -> TargetMember:
    ids = {"orders": ORDERS, "events": EVENTS}
    return TargetMember(member_id=member_id, instance_id=None, rack_id=None, subscribed_topic_names=topics,
                        subscribed_topic_ids=tuple(ids[t] for t in topics if t in ids),
                        current_target=target or {})


def _effect(*members: TargetMember, assignor: str = "uniform", epoch: int = 3) -> NeedsTargetAssignment:
    return NeedsTargetAssignment(group_id="g", group_epoch=epoch, assignor=assignor, members=members, topics=TOPICS)


def test_every_subscribed_partition_goes_to_exactly_one_subscriber_by_topic_id() -> None:
    effect = _effect(_member("a", "orders", "events"), _member("b", "orders"), _member("c", "events", "missing"))
    (answer,) = driver_only_runner(dict).assign_targets([effect])
    assert (answer.group_id, answer.group_epoch, answer.error) == ("g", 3, Errors.NONE)
    assert answer.assignment is not None
    owners = [(topic_id, p) for partitions in answer.assignment.values() for topic_id, ps in partitions.items()
              for p in ps]
    assert sorted(owners) == sorted([(ORDERS, p) for p in range(4)] + [(EVENTS, p) for p in range(2)])
    assert set(answer.assignment["b"]) <= {ORDERS} and set(answer.assignment["c"]) <= {EVENTS}


def test_the_current_target_is_the_claim_a_sticky_assignor_keeps() -> None:
    kept = {ORDERS: frozenset({0, 1}), GONE: frozenset({0})}  # a deleted topic's claim is dropped
    effect = _effect(_member("a", "orders", target=kept), _member("b", "orders"), assignor="sticky")
    group = target_group(effect, {})
    assert {(c.member_id, c.topic, c.partition, c.generation) for c in group.claims} == {
        ("a", "orders", 0, 2), ("a", "orders", 1, 2)}
    (answer,) = driver_only_runner(dict).assign_targets([effect])
    assert answer.assignment is not None and answer.assignment["a"] == {ORDERS: frozenset({0, 1})}


def test_only_the_newest_epoch_of_a_group_is_assigned_and_an_unknown_assignor_fails_its_group() -> None:
    old, new = _effect(_member("a", "orders"), epoch=3), _effect(_member("a", "orders"), epoch=4)
    unknown = NeedsTargetAssignment(group_id="h", group_epoch=1, assignor="nope", members=(), topics=TOPICS)
    answers = {a.group_id: a for a in driver_only_runner(dict).assign_targets([old, new, unknown])}
    assert answers["g"].group_epoch == 4
    assert answers["h"].error == Errors.INCONSISTENT_GROUP_PROTOCOL and answers["h"].assignment is None
