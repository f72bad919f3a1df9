"""What a ``server-*`` assignor is told a member owns (KIP-429): the member's own word, except for v0 subscriptions.

A cooperative member reports its owned partitions in every JoinGroup. One whose last SyncGroup answer never reached
it reports nothing; if the coordinator substituted the assignment it had stored for that member, the cooperative
assignor would keep those partitions "owned" by a member that does not consume them, and nobody would ever revoke
them: a stuck split. Only a v0 subscription (which has no owned field) gets the stored assignment.
"""

from __future__ import annotations

from groupcoord.coordinator import CompleteAssignment, NeedsAssignment
from groupcoord.protocol.consumer_protocol import Subscription, TopicPartitions, encode_subscription
from groupcoord.protocol.requests import JoinGroupProtocol

from .context import CoordinatorTestContext, protocols, round_robin

PROTOCOL = "server-cooperative-sticky"


def _protocols(*, owned: tuple[TopicPartitions, ...] = (), version: int = 3) -> tuple[JoinGroupProtocol, ...]:
    metadata = encode_subscription(Subscription(version=version, topics=("t",), owned_partitions=owned))
    return (JoinGroupProtocol(PROTOCOL, metadata),)


def _stable_server_group(ctx: CoordinatorTestContext) -> tuple[list[str], int]:
    """Two members, generation assigned by the "server" as round robin over t[0..3]: a -> 0, 2; b -> 1, 3."""
    tokens = [ctx.join_new("g", protos=protocols(PROTOCOL))[1] for _ in range(2)]
    ctx.sleep_until_answered(tokens)
    members = sorted(r.member_id for r in ctx.assert_all_joined(tokens))
    generation = ctx.response(tokens[0]).generation_id
    ctx.complete_assignment(CompleteAssignment(group_id="g", generation_id=generation,
                                               assignments=round_robin(members, {"t": 4})))
    return members, generation


def _rejoin_both(ctx: CoordinatorTestContext, members: list[str],
                 metadata: dict[str, tuple[JoinGroupProtocol, ...]]) -> NeedsAssignment:
    before = len(ctx.effects)
    tokens = [ctx.join("g", m, protos=metadata[m]) for m in members]
    ctx.sleep_until_answered(tokens)
    ctx.assert_all_joined(tokens)
    (effect,) = ctx.effects[before:]
    return effect


def test_member_whose_sync_was_cut_off_owns_nothing_in_the_next_cooperative_assignment(
        ctx: CoordinatorTestContext) -> None:
    """b never received t[1, 3] and rejoins listing nothing: the assignor must see b owning nothing, so t[1, 3]
    are free to hand out, while a's reported ownership is passed through as it is."""
    (a, b), _ = _stable_server_group(ctx)
    effect = _rejoin_both(ctx, [a, b], {a: _protocols(owned=(TopicPartitions("t", (0, 2)),)), b: _protocols()})
    owned = {m.member_id: m.owned for m in effect.members}
    assert owned == {a: (TopicPartitions("t", (0, 2)),), b: ()}


def test_v0_subscription_without_owned_field_gets_the_stored_assignment(ctx: CoordinatorTestContext) -> None:
    """A v0 subscription cannot report ownership: the coordinator's stored assignment stands in for it."""
    (a, b), _ = _stable_server_group(ctx)
    effect = _rejoin_both(ctx, [a, b], {a: _protocols(version=0), b: _protocols(version=0)})
    owned = {m.member_id: m.owned for m in effect.members}
    assert owned == {a: (TopicPartitions("t", (0, 2)),), b: (TopicPartitions("t", (1, 3)),)}
