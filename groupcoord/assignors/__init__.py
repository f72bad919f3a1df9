"""Partition assignors as Spark DataFrame operations.

``get_assignor(name, **options).assign(members, partitions, owned=None)`` returns a lazy DataFrame
``[group_id,] member_id, topic, partition``. See ``docs/assignors.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict, Unpack

from groupcoord.assignors.base import Assignor
from groupcoord.assignors.cooperative_sticky import CooperativeStickyAssignor
from groupcoord.assignors.errors import AssignorInputError
from groupcoord.assignors.range import RangeAssignor
from groupcoord.assignors.roundrobin import RoundRobinAssignor
from groupcoord.assignors.sticky import StickyAssignor
from groupcoord.assignors.subscriptions import SubscriptionsMode
from groupcoord.assignors.uniform import UniformAssignor
from groupcoord.assignors.weighted import WeightedAssignor

ASSIGNOR_NAMES: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "weighted")

# Callables, not type[Assignor]: each class takes its own keyword-only fields (AssignorOptions checks the names).
_CLASSES: dict[str, Callable[..., Assignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
    "uniform": UniformAssignor,
    "weighted": WeightedAssignor,
}


class AssignorOptions(TypedDict, total=False):
    """The keyword-only options of :func:`get_assignor`; each assignor accepts the ones its class declares."""

    rack_aware: bool
    """Prefer same-rack members (range, sticky, cooperative-sticky, uniform)."""
    subscriptions: SubscriptionsMode
    """Whether the call's groups subscribe alike (the balanced assignors): checked (``auto``) or stated."""
    tolerance: float
    """How far from the weight quota a member may go (weighted)."""


def get_assignor(name: str, **options: Unpack[AssignorOptions]) -> Assignor:
    """Build the assignor called ``name`` with keyword-only ``options``; unknown names, and options the assignor
    does not take, raise ``ValueError``."""
    if name not in _CLASSES:
        raise ValueError(f"unknown assignor {name!r}; known assignors: {', '.join(ASSIGNOR_NAMES)}")
    try:
        return _CLASSES[name](**options)
    except TypeError as exc:
        raise ValueError(f"bad options for assignor {name!r}: {exc}") from None


__all__ = ["ASSIGNOR_NAMES", "Assignor", "AssignorInputError", "AssignorOptions", "get_assignor"]
