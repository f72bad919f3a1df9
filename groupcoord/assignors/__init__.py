"""Partition assignors: each algorithm in plain Python (:mod:`groupcoord.assignors.algorithms`) and as a Spark
DataFrame plan giving the same rows.

``get_assignor(name, **options).assign(members, partitions, owned=None)`` returns a lazy DataFrame
``[group_id,] member_id, topic, partition``. See ``docs/assignors.md``. Importing this package loads no Spark: the
plans are imported by :func:`get_assignor` (the coordinator's driver engine needs only the algorithms).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from groupcoord.assignors.errors import AssignorInputError

if TYPE_CHECKING:
    from groupcoord.assignors.base import Assignor
    from groupcoord.assignors.engine import SubscriptionsMode

ASSIGNOR_NAMES: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "weighted")

_CLASSES: dict[str, tuple[str, str]] = {
    "range": ("range_plan", "RangeAssignor"),
    "roundrobin": ("roundrobin_plan", "RoundRobinAssignor"),
    "sticky": ("sticky_plan", "StickyAssignor"),
    "cooperative-sticky": ("cooperative_sticky_plan", "CooperativeStickyAssignor"),
    "uniform": ("uniform_plan", "UniformAssignor"),
    "weighted": ("weighted_plan", "WeightedAssignor"),
}
"""Name -> (module of ``groupcoord.assignors``, class), imported on first use. Each assignor's DataFrame plan is
``<name>_plan.py``; its Python algorithm is :mod:`groupcoord.assignors.algorithms`' module of the same name."""

WEIGHING_ASSIGNORS: tuple[str, ...] = ("weighted",)
"""The assignors that read the partitions' ``weight`` (the others balance partition counts)."""


class AssignorOptions(TypedDict, total=False):
    """The keyword-only options of :func:`get_assignor`; each assignor accepts the ones its class declares."""

    rack_aware: bool
    """Prefer same-rack members (range, sticky, cooperative-sticky, uniform)."""
    subscriptions: SubscriptionsMode
    """Whether the call's groups subscribe alike (the balanced assignors): checked (``auto``) or stated."""
    driver_partitions: int
    """A heterogeneous call small enough to collect (at most this many rows) runs on the driver, 0 never (the
    balanced assignors; :func:`groupcoord.assignors.engine.choose_engine`)."""
    tolerance: float
    """How far from the weight quota a member may go (weighted)."""


def get_assignor(name: str, **options: Unpack[AssignorOptions]) -> Assignor:
    """Build the assignor called ``name`` with keyword-only ``options``; unknown names, and options the assignor
    does not take, raise ``ValueError``."""
    if name not in _CLASSES:
        raise ValueError(f"unknown assignor {name!r}; known assignors: {', '.join(ASSIGNOR_NAMES)}")
    module, cls = _CLASSES[name]
    # Callables, not type[Assignor]: each class takes its own keyword-only fields (AssignorOptions checks the names).
    build: Callable[..., Assignor] = getattr(importlib.import_module(f"groupcoord.assignors.{module}"), cls)
    try:
        return build(**options)
    except TypeError as exc:
        raise ValueError(f"bad options for assignor {name!r}: {exc}") from None


def __getattr__(name: str) -> Any:
    """``Assignor`` (the DataFrame interface) is imported on first use, with pyspark."""
    if name == "Assignor":
        from groupcoord.assignors.base import Assignor

        return Assignor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ASSIGNOR_NAMES", "WEIGHING_ASSIGNORS", "Assignor", "AssignorInputError", "AssignorOptions", "get_assignor"]
