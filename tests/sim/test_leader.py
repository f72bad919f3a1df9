"""The simulated leader's input to the real assignors: each member's topics, ``group.instance.id`` and owned
partitions claimed in the generation its Subscription carries."""

from __future__ import annotations

from kafka.structs import TopicPartition

from groupcoord.assignors.algorithms import Claim, Member, Partition
from groupcoord.member.subscription import assigned_partitions, subscription_metadata
from groupcoord.protocol.responses import JoinGroupMember
from groupcoord.sim.leader import assignments, plan, read_group, subscribed_topics


def _member(member_id: str, topics: tuple[str, ...], owned: tuple[int, ...] = (), generation: int = -1,
            instance_id: str | None = None) -> JoinGroupMember:
    return JoinGroupMember(member_id, instance_id, subscription_metadata(
        topics, [TopicPartition("t0", p) for p in owned], generation))


def test_the_leader_reads_instance_ids_claims_and_their_generations() -> None:
    group = read_group([_member("a", ("t0",), (0, 1), 3, "static-a"), _member("b", ("t0", "gone")),
                        JoinGroupMember("c", None, b"\xff")], {"t0": 2, "t1": 5})
    assert group.members == (Member("a", ("t0",), "static-a"), Member("b", ("gone", "t0")), Member("c", ()))
    assert group.partitions == (Partition("t0", 0), Partition("t0", 1))
    assert group.claims == (Claim("a", "t0", 0, 3), Claim("a", "t0", 1, 3))
    assert subscribed_topics(group) == {"t0", "gone"}


def test_a_stale_claim_loses_to_a_newer_one() -> None:
    """a still reports t0-0 from generation 2, b owns it since generation 3: b keeps it and a gets the free t0-1
    (with the generations dropped, the two claims would tie and cooperative-sticky would give t0-0 to nobody this
    round)."""
    group = read_group([_member("a", ("t0",), (0,), 2), _member("b", ("t0",), (0,), 3)], {"t0": 2})
    assert plan(group, cooperative=True) == {"a": {("t0", 1)}, "b": {("t0", 0)}}


def test_a_member_given_nothing_gets_an_empty_assignment() -> None:
    encoded = assignments([_member("a", ("t0",)), _member("b", ("t0",))], {"t0": 1}, cooperative=False)
    assert {m: assigned_partitions(data) for m, data in encoded.items()} == {
        "a": {TopicPartition("t0", 0)}, "b": frozenset()}
