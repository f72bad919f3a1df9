"""``sticky``, ``cooperative-sticky`` and ``uniform`` on a group whose members subscribe to different topics.

*Balanced* is global: member counts differ by at most one, or no partition could move to a member with two or more
fewer that subscribes to its topic. *Sticky*: every partition a member owns stays with it when some balanced
assignment keeps them all (so a subset of a balanced assignment, cooperative-sticky's round one, is kept whole);
otherwise as few owned partitions move as the steps below find.

1. *Pin* every owned partition to its owner; hand each free partition (most constrained topics first: fewest
   subscribers) to its least loaded subscriber (same rack first, then member order).
2. *Even out* the free partitions: while a chain of moves of free partitions leads from a member ``U`` to a
   member ``V`` with ``L_U >= L_V + 2`` (``U`` gives a partition of a topic ``V1`` subscribes to, ``V1`` one of a
   topic ``V2`` subscribes to, ..., ``V``), apply it. Loads in between stay; the sum of squared loads drops, so this
   stops, at a least-squares completion of the pins (the loads of all completions form an M-convex set, where no
   such chain means optimal).
3. *Repair*: a partition of topic ``T`` on ``X`` with a subscriber ``Y`` of ``T`` two lower is a violation (it
   could move); the total violation is ``sum(max(0, L_X - 1 - least load of T's subscribers))`` over every held
   partition, 0 exactly when the assignment is balanced. A chain of free moves that raises such a ``Y`` or lowers
   such an ``X`` is applied when it lowers the total violation.
4. *Release* a pin only when no such chain helps: the pinned partition with the widest violation moves to its
   topic's least loaded subscriber (``uniform``: rack locality first); then steps 3-4 again. With no pin left, step
   2 ends it: a least-squares assignment is balanced.
5. *Search*, only when step 4 released a pin: steps 2-4 can miss a balanced assignment that keeps every pin (it
   may need loads far from least squares: a member that can take only another member's owned partition holds that
   member's load down to one). A depth-first search over how many free partitions of each topic each subscriber
   takes finds one if it exists (within :data:`SEARCH_BUDGET`, which covers every group the tests draw); its
   counts become partitions through :func:`~groupcoord.assignors.algorithms.fill.fill`.

Step 3 lowers the total violation and step 4 the number of pins, so the algorithm stops, and only when no
partition can move to a subscriber two lower: the result is balanced. Exactness (every owned partition kept
whenever some balanced assignment keeps them all) is checked by brute force over every completion of small groups
(``tests/assignors/test_algorithms.py``). Worked example: A subscribes to t1 and t2, B to t1, two partitions each;
A owned t1p0, t1p1 and t2p0::

    pins: A [t1p0, t1p1, t2p0]; free t2p1 -> A (only subscriber): A 4, B 0
    release: t1p0 -> B, then t1p1 -> B (no free chain can raise B, and no assignment keeps all three)
    A: [t2p0, t2p1]   B: [t1p0, t1p1]

Everything iterates in a fixed order (member rank, topic, partition, never a set's order), so the same group gives
the same rows on the driver and in a Spark worker.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Iterator, Sequence

from groupcoord.assignors.algorithms.fill import Slots, fill
from groupcoord.assignors.algorithms.group import Group, Key

log = logging.getLogger("groupcoord.assignors.algorithms.global_balance")

Move = tuple[str, str, str]
"""``(giver, topic, receiver)``: one free partition of ``topic`` passes from ``giver`` to ``receiver``."""


class _State:
    """The assignment under construction: holders, loads, free holdings per member and topic, pins."""

    def __init__(self, group: Group, *, rack_aware: bool, racks_first: bool) -> None:
        self.members = [m.member_id for m in group.ranked if group.subscribed[m.member_id]]
        self.rank = group.rank
        self.rack = {m.member_id: m.rack if rack_aware else None for m in group.members}
        self.topics = {m: sorted(group.subscribed[m]) for m in self.members}
        self.subscribers = group.subscribers
        self.partitions = {p.key: p for p in group.assignable}
        self.racks_first = racks_first
        self.racked = any(rack is not None for rack in self.rack.values())
        """Whether any member has a rack (without one, no partition is ever in a member's rack)."""
        self.holder: dict[Key, str] = {}
        self.load = dict.fromkeys(self.members, 0)
        self.free: dict[str, dict[str, list[Key]]] = {m: {} for m in self.members}
        self.holders: dict[str, dict[str, None]] = {}
        """Per topic, the members holding a free partition of it (a dict as an ordered set)."""
        self.held: dict[str, dict[str, int]] = {m: {} for m in self.members}
        self.pins: dict[Key, str] = dict(sorted(group.owned.items()))
        self.pinned: dict[tuple[str, str], list[Key]] = {}
        """The pins by (holder, topic): a pin's violation depends only on those two."""
        for key, member in self.pins.items():
            self.holder[key] = member
            self.load[member] += 1
            self.held[member][key[0]] = self.held[member].get(key[0], 0) + 1
            self.pinned.setdefault((member, key[0]), []).append(key)

    def unpin(self, key: Key) -> str:
        """Release pin ``key``; returns its holder (the caller places it again)."""
        holder = self.pins.pop(key)
        keys = self.pinned[(holder, key[0])]
        keys.remove(key)
        if not keys:
            del self.pinned[(holder, key[0])]
        return holder

    def give(self, key: Key, member: str) -> None:
        """Place free partition ``key`` on ``member``."""
        self.holder[key] = member
        self.load[member] += 1
        self.held[member][key[0]] = self.held[member].get(key[0], 0) + 1
        self.free[member].setdefault(key[0], []).append(key)
        self.holders.setdefault(key[0], {})[member] = None

    def in_rack(self, key: Key, member: str) -> bool:
        """Whether ``key`` has a replica in ``member``'s rack (False without rack awareness)."""
        rack = self.rack[member]
        return rack is not None and rack in self.partitions[key].racks

    def move(self, giver: str, topic: str, receiver: str) -> None:
        """Move one of ``giver``'s free partitions of ``topic`` to ``receiver``: one in the receiver's rack and not
        the giver's first, then the first in (topic, partition) order."""
        keys = self.free[giver][topic]
        key = min(keys, key=lambda k: (not self.in_rack(k, receiver), self.in_rack(k, giver), k))
        keys.remove(key)
        if not keys:
            del self.free[giver][topic]
            del self.holders[topic][giver]
        self.take(key, giver)
        self.give(key, receiver)

    def take(self, key: Key, holder: str) -> None:
        """Take ``key`` off ``holder``'s load and counts (the caller places it again)."""
        self.load[holder] -= 1
        self.held[holder][key[0]] -= 1
        if not self.held[holder][key[0]]:
            del self.held[holder][key[0]]

    def lowest_of_all(self, load: dict[str, int] | None = None) -> dict[str, str]:
        """Every topic's least loaded subscriber (then by rank) under ``load`` (default: the current loads), in one
        pass over the members from least loaded."""
        load = self.load if load is None else load
        lowest: dict[str, str] = {}
        for member in sorted(self.members, key=lambda m: (load[m], self.rank[m])):
            for topic in self.topics[member]:
                lowest.setdefault(topic, member)
        return lowest

    def violation(self, chain: Sequence[Move] = ()) -> int:
        """The total violation ``sum(max(0, L_X - 1 - low_T))`` over every held partition (of topic ``T``, on
        ``X``; ``low_T`` is the least load among ``T``'s subscribers), after ``chain`` if one is given: 0 exactly
        when the assignment is balanced."""
        load, held = self.load, self.held
        if chain:
            touched = {m for giver, _, receiver in chain for m in (giver, receiver)}
            load = {**load, chain[0][0]: load[chain[0][0]] - 1}
            load[chain[-1][2]] += 1
            held = {**held, **{m: dict(held[m]) for m in touched}}
            for giver, topic, receiver in chain:
                held[giver][topic] -= 1
                held[receiver][topic] = held[receiver].get(topic, 0) + 1
        low = {topic: load[member] for topic, member in self.lowest_of_all(load).items()}
        return sum(n * max(0, load[member] - 1 - low[topic])
                   for member, topics in held.items() for topic, n in topics.items())

    def chains_into(self, targets: list[str]) -> dict[str, list[Move]]:
        """Every member that reaches one of ``targets`` by a chain of free moves, with its (shortest) chain."""
        chains: dict[str, list[Move]] = {t: [] for t in targets}
        seen_topics: set[str] = set()
        queue = deque(targets)
        while queue:
            receiver = queue.popleft()
            for topic in self.topics[receiver]:
                if topic in seen_topics:
                    continue
                seen_topics.add(topic)
                for giver in sorted(self.holders.get(topic, ()), key=self.rank.__getitem__):
                    if giver not in chains:
                        chains[giver] = [(giver, topic, receiver), *chains[receiver]]
                        queue.append(giver)
        for target in targets:
            del chains[target]
        return chains

    def chains_from(self, giver: str) -> dict[str, list[Move]]:
        """Every member ``giver`` reaches by a chain of free moves, with its (shortest) chain."""
        chains: dict[str, list[Move]] = {giver: []}
        seen_topics: set[str] = set()
        queue = deque([giver])
        while queue:
            member = queue.popleft()
            for topic in sorted(self.free[member]):
                if topic in seen_topics:
                    continue
                seen_topics.add(topic)
                for receiver in self.subscribers[topic]:
                    if receiver not in chains:
                        chains[receiver] = [*chains[member], (member, topic, receiver)]
                        queue.append(receiver)
        del chains[giver]
        return chains

    def apply(self, chain: list[Move]) -> None:
        """Apply a chain of moves in order."""
        for giver, topic, receiver in chain:
            self.move(giver, topic, receiver)


def _start(state: _State) -> None:
    """Step 1: each free partition to its least loaded subscriber, most constrained topics first."""
    by_topic: dict[str, list[Key]] = {}
    for key in state.partitions:
        if key not in state.pins:
            by_topic.setdefault(key[0], []).append(key)
    for topic in sorted(by_topic, key=lambda t: (len(state.subscribers[t]), t)):
        if not state.racked:  # the same choices as below, from a heap: only the chosen member's load changes
            heap = [(state.load[m], state.rank[m], m) for m in state.subscribers[topic]]
            heapq.heapify(heap)
            for key in by_topic[topic]:
                load, rank, member = heapq.heappop(heap)
                state.give(key, member)
                heapq.heappush(heap, (load + 1, rank, member))
            continue
        for key in by_topic[topic]:
            def preference(member: str, key: Key = key) -> tuple[int, bool, int]:
                return (state.load[member], not state.in_rack(key, member), state.rank[member])

            state.give(key, min(state.subscribers[topic], key=preference))


def _even_out(state: _State) -> None:
    """Step 2: apply chains from a member to one two lower until there is none."""
    while True:
        levels = sorted(set(state.load.values()))
        chain = None
        for level in levels:
            if level + 2 > levels[-1]:
                break
            chains = state.chains_into([m for m in state.members if state.load[m] <= level])
            givers = [m for m in chains if state.load[m] >= level + 2]
            if givers:
                chain = chains[min(givers, key=lambda m: (-state.load[m], state.rank[m]))]
                break
        if chain is None:
            return
        state.apply(chain)


def _repair(state: _State, before: int) -> bool:
    """Step 3: apply one chain of free moves that lowers the total violation ``before``; False when none does.

    Nothing changes until a chain is applied, so each search and each chain's violation is computed once per call
    (a violating pair with the same member and least loaded subscriber as an earlier one has the same candidates),
    not once per violating (member, topic) pair for each partition a newcomer receives.
    """
    lowest = state.lowest_of_all()
    raising: dict[str, list[list[Move]]] = {}
    lowering: dict[str, list[list[Move]]] = {}
    tried: set[tuple[str, str]] = set()
    rejected: set[tuple[Move, ...]] = set()
    for member in state.members:
        for topic in sorted(state.held[member]):
            low = lowest[topic]
            if state.load[member] < state.load[low] + 2 or (member, low) in tried:
                continue
            tried.add((member, low))
            if low not in raising:
                into = state.chains_into([low])
                raising[low] = [into[m] for m in sorted(into, key=lambda m: (-state.load[m], state.rank[m]))]
            if member not in lowering:
                out = state.chains_from(member)
                lowering[member] = [out[m] for m in sorted(out, key=lambda m: (state.load[m], state.rank[m]))]
            for chain in (*raising[low], *lowering[member]):
                if tuple(chain) in rejected:
                    continue
                if state.violation(chain) < before:
                    state.apply(chain)
                    return True
                rejected.add(tuple(chain))
    return False


def _release(state: _State) -> None:
    """Step 4: unpin the pinned partition with the widest violation and move it to its topic's least loaded
    subscriber."""
    lowest = state.lowest_of_all()
    load = state.load
    low = {topic: load[member] for topic, member in lowest.items()}
    # The widest gap first, over (holder, topic) pairs rather than every pin: a pin's gap depends on those two only.
    widest = max(load[holder] - low[topic] for holder, topic in state.pinned)

    def order(key: Key) -> tuple[bool, bool, Key]:
        receiver, holder = lowest[key[0]], state.pins[key]
        return (not state.in_rack(key, receiver), state.in_rack(key, holder), key)

    widest_pins = (keys for (holder, topic), keys in state.pinned.items() if load[holder] - low[topic] == widest)
    if state.racks_first and state.racked:
        key = min((k for keys in widest_pins for k in keys), key=order)
    else:  # each list is in key order
        key = min(keys[0] for keys in widest_pins)
    receiver = lowest[key[0]]
    holder = state.unpin(key)
    state.take(key, holder)
    state.give(key, receiver)


def globally_balanced(group: Group, *, rack_aware: bool = True, racks_first: bool = False) -> dict[Key, str]:
    """Partition -> member, balanced globally and sticky (see the module docstring); ``racks_first`` is
    ``uniform``'s: rack locality decides first which pinned partition is released."""
    state = _State(group, rack_aware=rack_aware, racks_first=racks_first)
    if not state.members:
        return {}
    _start(state)
    _even_out(state)
    pinned = len(state.pins)
    while (violation := state.violation()) > 0:
        if _repair(state, violation):
            continue
        if not state.pins:
            _even_out(state)  # nothing pinned: a least-squares assignment is balanced
            break
        _release(state)
    if len(state.pins) < pinned:
        whole = _keeping_every_pin(group, rack_aware=rack_aware)
        if whole is not None:
            return whole
    return dict(state.holder)


SEARCH_BUDGET = 4_000_000
"""Work (search steps times the group's member-topic pairs) of :func:`_keeping_every_pin`'s search, about 2 s of
Python: 20,000 steps for a group of 10 members on 10 topics. Past it, steps 1-4 stand (a pin may have been released
although some balanced assignment keeps them all; logged)."""


def _keeping_every_pin(group: Group, *, rack_aware: bool) -> dict[Key, str] | None:
    """A balanced assignment that keeps every owned partition, found by a depth-first search over how many free
    partitions of each topic each subscriber takes (topics with fewest subscribers first), or None when there is
    none (or the search ran past :data:`SEARCH_BUDGET` steps).

    Steps 1-4 can miss such an assignment: it may need loads far from least squares (a member that can take only
    an owned partition of another member holds that member's load down to one). The search prunes a branch as soon
    as a member holding a topic is two above what a subscriber of that topic can still reach.
    """
    members = [m.member_id for m in group.ranked if group.subscribed[m.member_id]]
    load = dict.fromkeys(members, 0)
    held: dict[str, dict[str, int]] = {m: {} for m in members}
    for (topic, _), member in group.owned.items():
        load[member] += 1
        held[member][topic] = held[member].get(topic, 0) + 1
    free: dict[str, list[Key]] = {}
    for partition in group.assignable:
        if partition.key not in group.owned:
            free.setdefault(partition.topic, []).append(partition.key)
    topics = sorted(free, key=lambda t: (len(group.subscribers[t]), t))
    reach = {m: load[m] + sum(len(free[t]) for t in group.subscribed[m] if t in free) for m in members}
    steps = 0

    step_cost = sum(len(ms) for ms in group.subscribers.values()) + sum(len(group.subscribed[m]) for m in members)
    budget = SEARCH_BUDGET // max(step_cost, 1)

    def pruned() -> bool:
        reachable = {t: min(reach[y] for y in ms) for t, ms in group.subscribers.items()}
        return any(load[x] > reachable[t] + 1 for x in members for t in held[x])

    def search(index: int) -> dict[str, dict[str, int]] | None:
        nonlocal steps
        steps += 1
        if steps > budget or pruned():
            return None
        if index == len(topics):
            low = {t: min(load[m] for m in ms) for t, ms in group.subscribers.items()}
            balanced = all(load[x] <= low[t] + 1 for x in members for t in held[x])
            return {m: dict(held[m]) for m in members} if balanced else None
        topic = topics[index]
        subscribers = sorted(group.subscribers[topic], key=lambda m: (load[m], group.rank[m]))
        for m in subscribers:
            reach[m] -= len(free[topic])
        for split in _splits(len(free[topic]), len(subscribers)):
            for m, n in zip(subscribers, split, strict=True):
                load[m] += n
                reach[m] += n
                if n:
                    held[m][topic] = held[m].get(topic, 0) + n
            found = search(index + 1)
            for m, n in zip(subscribers, split, strict=True):
                load[m] -= n
                reach[m] -= n
                if n:
                    held[m][topic] -= n
                    if not held[m][topic]:
                        del held[m][topic]
            if found is not None or steps > budget:
                for m in subscribers:
                    reach[m] += len(free[topic])
                return found
        for m in subscribers:
            reach[m] += len(free[topic])
        return None

    counts = search(0)
    if counts is None:
        if steps > budget:
            log.info("group %r: no assignment keeping every owned partition found within %d search steps",
                     group.group_id, budget)
        return None
    placed = dict(group.owned)
    pinned: dict[tuple[str, str], int] = {}
    for (topic, _), member in group.owned.items():
        pinned[(member, topic)] = pinned.get((member, topic), 0) + 1
    for topic in topics:
        owed = {m: counts[m].get(topic, 0) - pinned.get((m, topic), 0) for m in group.subscribers[topic]}
        slots = [Slots(m, group.rank[m], group.rack[m], n) for m, n in owed.items() if n > 0]
        placed.update(fill([group.partition[k] for k in free[topic]], slots, rack_aware=rack_aware))
    return placed


def _splits(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every way to split ``total`` into ``parts`` non-negative counts, the most even first (then front-loaded)."""
    if parts == 1:
        yield (total,)
        return
    even = -(-total // parts)
    for first in [*range(even, total + 1), *range(even - 1, -1, -1)]:
        for rest in _splits(total - first, parts - 1):
            yield (first, *rest)


def is_balanced(placed: dict[Key, str], group: Group) -> bool:
    """Whether ``placed`` is balanced globally (see the module docstring)."""
    load = {m: 0 for m, topics in group.subscribed.items() if topics}
    for member in placed.values():
        load[member] += 1
    low = {t: min(load[m] for m in ms) for t, ms in group.subscribers.items()}
    return all(load[member] <= low[key[0]] + 1 for key, member in placed.items())


