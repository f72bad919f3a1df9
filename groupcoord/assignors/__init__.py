"""Partition assignors as Spark DataFrame operations.

``get_assignor(name, **options).assign(members, partitions, owned=None)`` returns a lazy DataFrame
``[group_id,] member_id, topic, partition``. See ``docs/assignors.md``.
"""

from __future__ import annotations

from typing import Any

from groupcoord.assignors.base import Assignor
from groupcoord.assignors.cooperative_sticky import CooperativeStickyAssignor
from groupcoord.assignors.errors import AssignorInputError
from groupcoord.assignors.range import RangeAssignor
from groupcoord.assignors.roundrobin import RoundRobinAssignor
from groupcoord.assignors.sticky import StickyAssignor
from groupcoord.assignors.uniform import UniformAssignor
from groupcoord.assignors.weighted import WeightedAssignor

ASSIGNOR_NAMES: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "weighted")

_CLASSES: dict[str, type[Assignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
    "uniform": UniformAssignor,
    "weighted": WeightedAssignor,
}


def get_assignor(name: str, **options: Any) -> Assignor:
    """Build the assignor called ``name`` with keyword-only ``options``; unknown names raise ``ValueError``."""
    if name not in _CLASSES:
        raise ValueError(f"unknown assignor {name!r}; known assignors: {', '.join(ASSIGNOR_NAMES)}")
    try:
        return _CLASSES[name](**options)
    except TypeError as exc:
        raise ValueError(f"bad options for assignor {name!r}: {exc}") from None


__all__ = ["ASSIGNOR_NAMES", "Assignor", "AssignorInputError", "get_assignor"]
