"""Each assignor's algorithm in plain Python, one group at a time: the reference the Spark plans are tested against,
and the engine for small groups (on the driver) and for heterogeneous groups (on the driver, or in Python tasks when
large; :mod:`groupcoord.assignors.engine` decides).

Read these modules to learn what an assignor does; :mod:`groupcoord.assignors` holds the DataFrame plans that give
the same rows at scale (property tests over both engines prove it: ``tests/assignors/test_engines_agree.py``):

- :mod:`~groupcoord.assignors.algorithms.group`: the inputs, member order, subscriptions and valid owned claims;
- :mod:`~groupcoord.assignors.algorithms.range` and :mod:`~groupcoord.assignors.algorithms.roundrobin`: Kafka's;
- :mod:`~groupcoord.assignors.algorithms.sticky`: sticky, cooperative-sticky and uniform for homogeneous groups;
- :mod:`~groupcoord.assignors.algorithms.global_balance`: the same three for heterogeneous groups (exact: every
  owned partition stays when some balanced assignment keeps them all);
- :mod:`~groupcoord.assignors.algorithms.fill`: the shared step that hands free partitions to free slots.

``weighted`` has no Python engine: its plan adds floating-point weights in Spark's order, which the driver could not
reproduce bit for bit, so it always runs on Spark.
"""

from __future__ import annotations

from groupcoord.assignors.algorithms.global_balance import globally_balanced
from groupcoord.assignors.algorithms.group import Claim, Group, Key, Member, Partition
from groupcoord.assignors.algorithms.range import assign_range
from groupcoord.assignors.algorithms.roundrobin import assign_roundrobin
from groupcoord.assignors.algorithms.sticky import balanced_target, revoking

PYTHON_ASSIGNORS: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform")
"""The assignors with a Python engine (all but ``weighted``)."""

BALANCED_ASSIGNORS: tuple[str, ...] = ("sticky", "cooperative-sticky", "uniform")


def target(group: Group, name: str, *, rack_aware: bool = True) -> dict[Key, str]:
    """The balanced target of ``sticky`` / ``cooperative-sticky`` / ``uniform`` for ``group``: per group, balanced
    then sticky (homogeneous) or globally balanced and sticky (heterogeneous)."""
    racks_first = name == "uniform"
    if group.homogeneous:
        return balanced_target(group, rack_aware=rack_aware, racks_first=racks_first)
    return globally_balanced(group, rack_aware=rack_aware, racks_first=racks_first)


def assign(group: Group, name: str, *, rack_aware: bool = True) -> dict[Key, str]:
    """Partition -> member under assignor ``name`` (one of :data:`PYTHON_ASSIGNORS`)."""
    if name == "range":
        return assign_range(group, rack_aware=rack_aware)
    if name == "roundrobin":
        return assign_roundrobin(group)
    if name not in BALANCED_ASSIGNORS:
        raise ValueError(f"assignor {name!r} has no Python engine; known: {', '.join(PYTHON_ASSIGNORS)}")
    placed = target(group, name, rack_aware=rack_aware)
    return revoking(group, placed) if name == "cooperative-sticky" else placed


__all__ = ["BALANCED_ASSIGNORS", "PYTHON_ASSIGNORS", "Claim", "Group", "Key", "Member", "Partition", "assign",
           "target"]
