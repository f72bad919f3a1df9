"""``sticky``, ``cooperative-sticky`` and ``uniform`` on a group whose members subscribe to the same topics.

Balance first, then stickiness, with no iteration. With ``P`` partitions and ``n`` members, every quota is
``P // n``; the ``P % n`` members that own the most (then by member order) get one more, which keeps the most owned
partitions possible under balance. Each member keeps its owned partitions up to its quota, in (topic, partition)
order (``uniform``, rack-aware: those with a replica in its rack first); the free partitions then fill the remaining
quotas (:func:`~groupcoord.assignors.algorithms.fill.fill`). Worked example: C0 owned [t0p0, t0p1, t0p2], C1 owned
nothing, C2 joins; t0 has four partitions::

    C0: [t0p0, t0p1]      (kept; quota 2 because it owned the most)
    C1: [t0p2]            (moved: C0 was over quota)
    C2: [t0p3]

``uniform`` (KIP-848's server-side assignor) differs in one step only: with rack awareness, a member over its quota
keeps first the owned partitions with a replica in its rack. C0 (rack a) owned [t0p0 (racks b), t0p1 (racks a)], C1
(rack b) joins::

    uniform: C0: [t0p1]  C1: [t0p0]      (sticky, which keeps in (topic, partition) order: C0: [t0p0]  C1: [t0p1])

Groups whose subscriptions differ are balanced globally instead
(:mod:`~groupcoord.assignors.algorithms.global_balance`).

``cooperative-sticky`` (KIP-429) hands out the same target minus every partition that another member still claims
(in the partition's highest claimed generation, so a tie holds it back from both claimants, as Kafka does): that
member revokes it first, and the next rebalance hands it over. C0 owned [t0p0, t0p1], C1 joins::

    round 1: C0: [t0p0]          (t0p1 revoked, not yet given to C1)
    round 2: C0: [t0p0]  C1: [t0p1]
"""

from __future__ import annotations

from groupcoord.assignors.algorithms.fill import Slots, fill
from groupcoord.assignors.algorithms.group import Group, Key


def balanced_target(group: Group, *, rack_aware: bool = True, racks_first: bool = False) -> dict[Key, str]:
    """Partition -> member for a homogeneous group (see the module docstring); ``racks_first`` is ``uniform``'s
    keep order."""
    members = [m for m in group.ranked if group.subscribed[m.member_id]]
    if not members:
        return {}
    partitions = {p.key: p for p in group.assignable}
    owned: dict[str, list[Key]] = {m.member_id: [] for m in members}
    for key, owner in sorted(group.owned.items()):
        owned[owner].append(key)
    quota_of, extra = divmod(len(partitions), len(members))
    by_owned = sorted(members, key=lambda m: (-len(owned[m.member_id]), group.rank[m.member_id]))
    quota = {m.member_id: quota_of + (1 if i < extra else 0) for i, m in enumerate(by_owned)}
    placed: dict[Key, str] = {}
    slots = []
    for member in members:
        keys = owned[member.member_id]
        if racks_first and rack_aware:
            rack = member.rack
            keys = sorted(keys, key=lambda k: rack is None or rack not in partitions[k].racks)
        kept = keys[:quota[member.member_id]]
        placed.update((key, member.member_id) for key in kept)
        slots.append(Slots(member.member_id, group.rank[member.member_id], member.rack,
                           quota[member.member_id] - len(kept)))
    free = [p for key, p in partitions.items() if key not in placed]
    placed.update(fill(free, slots, rack_aware=rack_aware))
    return placed


def revoking(group: Group, target: dict[Key, str]) -> dict[Key, str]:
    """``cooperative-sticky``'s round: ``target`` minus every partition another member still claims (it is among
    the partition's claimants in its highest generation, :attr:`Group.claimants`)."""
    claimants = group.claimants
    return {key: member for key, member in target.items() if claimants.get(key, (member,)) == (member,)}
