"""The group's O(1) books (parked-JoinGroup count, protocol support tally) agree with a recount of the members.

A random sequence of the aggregate's operations (add, remove, new protocols, park and answer JoinGroups, static
replacement) runs against :class:`ClassicGroup`; after every step ``num_awaiting_join`` and ``supports_protocols``
must equal what scanning every member gives, which is how they were computed before they became tallies.
"""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.group.group import ClassicGroup
from groupcoord.group.member import Member
from groupcoord.group.selection import candidate_protocols
from groupcoord.protocol.requests import JoinGroupProtocol

NAMES = ("range", "roundrobin", "sticky", "server-cooperative-sticky")
TYPES = ("consumer", "connect")

protocol_lists = st.lists(st.sampled_from(NAMES), min_size=0, max_size=3, unique=True)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 7), protocol_lists, st.booleans(), st.booleans()),
        st.tuples(st.just("remove"), st.integers(0, 7)),
        st.tuples(st.just("protocols"), st.integers(0, 7), protocol_lists),
        st.tuples(st.just("park"), st.integers(0, 7)),
        st.tuples(st.just("take"), st.integers(0, 7)),
        st.tuples(st.just("replace"), st.integers(0, 7)),
    ),
    max_size=40,
)


def protocols(names: list[str]) -> tuple[JoinGroupProtocol, ...]:
    """Protocols named ``names`` with metadata of their own."""
    return tuple(JoinGroupProtocol(name, name.encode()) for name in names)


def member(member_id: str, names: list[str], *, static: bool, parked: bool) -> Member:
    """A consumer member supporting ``names``; with a parked JoinGroup when ``parked``."""
    return Member(member_id=member_id, group_instance_id=f"i-{member_id}" if static else None, client_id="c",
                  client_host="/127.0.0.1", rebalance_timeout_ms=1000, session_timeout_ms=1000,
                  protocol_type="consumer", protocols=protocols(names),
                  join_tokens=[f"t-{member_id}"] if parked else [])


def recounted_awaiting(group: ClassicGroup) -> int:
    """Members with a parked JoinGroup, counted by scanning."""
    return sum(1 for m in group.members.values() if m.is_awaiting_join)


def rescanned_support(group: ClassicGroup, protocol_type: str, names: list[str], excluding: str | None) -> bool:
    """``supports_protocols`` as a scan over the members computes it."""
    others = [m.protocol_names for m in group.members.values() if m.member_id != excluding]
    if not others:
        return bool(protocol_type) and bool(names)
    candidates = set(candidate_protocols(others))
    return protocol_type == group.protocol_type and any(name in candidates for name in names)


def apply(group: ClassicGroup, op: tuple[object, ...], step: int) -> None:
    """Run one operation on ``group`` (operations naming an absent member do nothing)."""
    kind, index = op[0], op[1]
    assert isinstance(index, int)
    ids = list(group.members)
    target = group.members.get(ids[index % len(ids)]) if ids else None
    if kind == "add":
        member_id = f"m-{index}-{step}"
        names, static, parked = op[2], op[3], op[4]
        assert isinstance(names, list) and isinstance(static, bool) and isinstance(parked, bool)
        group.add(member(member_id, names, static=static, parked=parked))
    elif target is None:
        return
    elif kind == "remove":
        group.remove(target.member_id)
    elif kind == "protocols":
        names = op[2]
        assert isinstance(names, list)
        group.update_protocols(target, protocols(names))
    elif kind == "park":
        group.park_join(target, f"t-{step}")
    elif kind == "take":
        tokens = group.take_join_tokens(target)
        assert not target.is_awaiting_join and all(isinstance(token, str) for token in tokens)
    elif kind == "replace" and target.group_instance_id is not None:
        old = group.replace_static_member(target.group_instance_id, target.member_id, f"{target.member_id}+{step}")
        assert old.member_id not in group.members


@settings(max_examples=300, deadline=None)
@given(ops=operations, probe_type=st.sampled_from(TYPES), probe=protocol_lists)
def test_tallies_match_a_recount_after_every_operation(ops: list[tuple[object, ...]], probe_type: str,
                                                       probe: list[str]) -> None:
    group = ClassicGroup("g", now_ms=0)
    for step, op in enumerate(ops):
        apply(group, op, step)
        assert group.num_awaiting_join == recounted_awaiting(group)
        for excluding in (None, "absent", *group.members):
            assert group.supports_protocols(probe_type, probe, excluding=excluding) == rescanned_support(
                group, probe_type, probe, excluding), (op, excluding)


def test_join_checks_do_not_scan_the_members() -> None:
    """10,000 checks against a group of 5,000 members take milliseconds (a scan per check would take seconds)."""
    group = ClassicGroup("g", now_ms=0)
    for i in range(5000):
        group.add(member(f"m-{i}", ["range", "roundrobin"], static=False, parked=i % 2 == 0))
    started = time.perf_counter()
    for i in range(10_000):
        assert group.supports_protocols("consumer", ["roundrobin"], excluding=f"m-{i % 5000}")
        assert group.num_awaiting_join == 2500
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"{elapsed:.2f} s for 10,000 checks"
