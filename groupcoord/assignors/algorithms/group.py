"""One group's inputs as plain Python values, and the facts every algorithm starts from.

The same definitions as the Spark plans' :mod:`groupcoord.assignors.prepare`:

- member order follows Java's ``MemberInfo``: static members (with a ``group_instance_id``) first, by instance id,
  then dynamic members by member id; ``rank`` is the 0-based position in that order;
- a member *subscribes* to the topics of its list that exist (have a partition in the input);
- a partition is *assignable* when some member subscribes to its topic;
- a *claim* is an owned row of a member of the group (a claim by anyone else is ignored). Claims are resolved per
  partition, as Kafka's ``AbstractStickyAssignor`` does: the claim of the highest generation among the partition's
  claimants wins (a null generation counts as -1) and the older ones are dropped; when several members claim it in
  that generation, none of them owns it. A winning claim is *valid* (the member owns the partition) when its member
  still subscribes to the topic and the partition is assignable.

Worked example: A claims t0p0 in generation 3, B claims t0p0 in generation 2 and t0p1 in generation 2, C and D both
claim t0p2 in generation 3::

    t0p0: A (generation 3 beats 2)    t0p1: B (nobody contests it)    t0p2: nobody (a tie in its top generation)

Kafka resolves a tie the same way; its homogeneous path also drops a partition when a tie among older claims was
met before the newest claim in its (hash) order of the members, which no fixed rule can reproduce: here the newest
claim wins.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from groupcoord.assignors.errors import AssignorInputError

Key = tuple[str, int]
"""A partition: ``(topic, partition)``."""


@dataclass(frozen=True)
class Member:
    """A member as the ``members`` input gives it."""

    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None
    rack: str | None = None


@dataclass(frozen=True)
class Partition:
    """A partition as the ``partitions`` input gives it (``racks``: the racks of its replicas)."""

    topic: str
    partition: int
    racks: tuple[str, ...] = ()
    weight: float = 1.0
    key: Key = field(init=False, repr=False, compare=False)
    """``(topic, partition)``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (self.topic, self.partition))


@dataclass(frozen=True)
class Claim:
    """A row of the ``owned`` input: ``member_id`` says it owns the partition, as of ``generation``."""

    member_id: str
    topic: str
    partition: int
    generation: int | None = None


@dataclass(frozen=True)
class Group:
    """One group's inputs, checked and with the facts the algorithms read (computed once, on first use)."""

    members: tuple[Member, ...]
    partitions: tuple[Partition, ...]
    claims: tuple[Claim, ...] = ()
    group_id: str = ""

    def __post_init__(self) -> None:
        check(self)

    @cached_property
    def ranked(self) -> tuple[Member, ...]:
        """The members in Java's ``MemberInfo`` order (``rank`` is the index)."""
        return tuple(sorted(self.members, key=lambda m: (m.group_instance_id is None, m.group_instance_id or "",
                                                          m.member_id)))

    @cached_property
    def rank(self) -> dict[str, int]:
        """Each member's rank."""
        return {m.member_id: i for i, m in enumerate(self.ranked)}

    @cached_property
    def rack(self) -> dict[str, str | None]:
        """Each member's rack."""
        return {m.member_id: m.rack for m in self.members}

    @cached_property
    def partition(self) -> dict[Key, Partition]:
        """Each partition by its key."""
        return {p.key: p for p in self.partitions}

    @cached_property
    def subscribed(self) -> dict[str, frozenset[str]]:
        """Each member's subscribed topics that exist."""
        existing = {p.topic for p in self.partitions}
        return {m.member_id: frozenset(t for t in m.topics if t in existing) for m in self.members}

    @cached_property
    def subscribers(self) -> dict[str, tuple[str, ...]]:
        """Each subscribed topic's subscribers, in member order."""
        result: dict[str, list[str]] = {}
        for member in self.ranked:
            for topic in sorted(self.subscribed[member.member_id]):
                result.setdefault(topic, []).append(member.member_id)
        return {t: tuple(ms) for t, ms in result.items()}

    @cached_property
    def assignable(self) -> tuple[Partition, ...]:
        """The partitions of subscribed topics, in (topic, partition) order."""
        return tuple(sorted((p for p in self.partitions if p.topic in self.subscribers), key=lambda p: p.key))

    @cached_property
    def claimants(self) -> dict[Key, tuple[str, ...]]:
        """Per claimed partition, the members that claim it in the highest generation any member claims it in (see
        the module docstring): one member, or several for a tie. In input order."""
        rank = self.rank
        top: dict[Key, list[Any]] = {}  # key -> [generation, member, member, ...]
        for claim in self.claims:
            if claim.member_id not in rank or claim.topic is None:
                continue
            generation = -1 if claim.generation is None else claim.generation
            key = (claim.topic, claim.partition)
            held = top.get(key)
            if held is None or generation > held[0]:
                top[key] = [generation, claim.member_id]
            elif generation == held[0] and claim.member_id not in held[1:]:
                held.append(claim.member_id)
        return {key: tuple(held[1:]) for key, held in top.items()}

    @cached_property
    def owned(self) -> dict[Key, str]:
        """The valid claims: partition -> its owner (see the module docstring). In input order: the algorithms
        sort what they iterate."""
        assignable = {p.key for p in self.assignable}
        subscribed = self.subscribed
        return {key: members[0] for key, members in self.claimants.items()
                if len(members) == 1 and key in assignable and key[0] in subscribed[members[0]]}

    @cached_property
    def homogeneous(self) -> bool:
        """Whether every member that subscribes to an existing topic subscribes to the same ones."""
        return len({topics for topics in self.subscribed.values() if topics}) <= 1


def check(group: Group) -> None:
    """Raise :class:`AssignorInputError` for the value errors the Spark plans report (same messages)."""
    seen = Counter(m.member_id for m in group.members)
    for member in group.members:
        if member.member_id is None or seen[member.member_id] > 1:
            raise AssignorInputError(f"duplicate or null member_id {member.member_id or 'null'} in group "
                                     f"'{group.group_id}'")
    keys = Counter(p.key for p in group.partitions)
    for p in group.partitions:
        where = f"{_or_null(p.topic)}-{_or_null(p.partition)}"
        if keys[p.key] > 1 and p.topic is not None and p.partition is not None:
            raise AssignorInputError(f"duplicate partition {where}")
        if p.topic is None or p.partition is None or p.partition < 0:
            raise AssignorInputError(f"negative or null partition {where}")
        if p.weight < 0:
            raise AssignorInputError(f"negative weight for partition {p.topic}")
    for claim in group.claims:
        if claim.partition is not None and claim.partition < 0:
            raise AssignorInputError(f"negative partition in owned: {claim.topic}-{claim.partition}")


def _or_null(value: object) -> str:
    """``value`` as the Spark plans print it in a message (SQL's ``coalesce(..., 'null')``)."""
    return "null" if value is None else str(value)


def group_of(members: Iterable[Member], partitions: Iterable[Partition], claims: Sequence[Claim] = (),
             group_id: str = "") -> Group:
    """A :class:`Group` from iterables (checked)."""
    return Group(tuple(members), tuple(partitions), tuple(claims), group_id)
