"""Which engine assigns a call: the DataFrame plan, or the Python algorithm on the driver or in Python tasks.

One function decides, :func:`choose_engine`, from :class:`Facts` about the call's input, with one threshold,
:data:`DRIVER_PARTITIONS`:

- ``weighted`` has no Python engine (its plan adds floating-point weights in Spark's order): always its plan;
- inputs held on the driver as Python values (the coordinator's runner, :func:`group_facts`) of at most
  :data:`DRIVER_PARTITIONS` partitions: the Python algorithm right there, with no Spark at all;
- inputs given as DataFrames (:meth:`~groupcoord.assignors.base.Assignor.assign`, :func:`frame_facts`) run the
  Python algorithm only when they hold a heterogeneous group of a balanced assignor (sticky, cooperative-sticky,
  uniform), whose global balance iterates and so has no plan: on the driver when the call is small enough to collect
  (at most :data:`DRIVER_PARTITIONS` rows of members, partitions and claims, which bounds its partitions), in
  Python tasks otherwise;
- everything else runs the plan: the homogeneous plan when every group's members are proven to declare the same
  topics, the general plan otherwise (a caller's bare ``subscriptions="homogeneous"`` is no proof).

Both engines give the same rows (``tests/assignors/test_engines_agree.py``), so the choice moves time, never an
answer. Worked example: the coordinator's bucket of 100 cooperative-sticky groups of 10 members x 100 partitions
(10,000 partitions) runs in Python on the driver; the same groups handed to ``assign`` as DataFrames run the
homogeneous plan, or, when some group's members subscribe differently, the Python algorithm on the driver after one
job collects them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from groupcoord.assignors.algorithms import BALANCED_ASSIGNORS, PYTHON_ASSIGNORS, Group, assign

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from groupcoord.assignors.prepare import Prepared

Engine = Literal["python", "python tasks", "homogeneous plan", "plan"]
"""``python``: the algorithm on the driver; ``python tasks``: the algorithm in Python tasks, one Spark job;
``homogeneous plan``: the DataFrame plan built on proven-homogeneous subscriptions; ``plan``: the general plan."""

SubscriptionsMode = Literal["auto", "homogeneous", "heterogeneous"]
"""The balanced assignors' ``subscriptions`` option: whether a call's groups subscribe alike is checked (``auto``),
or the caller says."""

SUBSCRIPTION_MODES: tuple[SubscriptionsMode, ...] = get_args(SubscriptionsMode)

Subscriptions = Literal["homogeneous", "heterogeneous", "unknown"]
"""Whether every group's members declare the same topic set: proven either way, or unknown (a caller's bare
statement that they do is not a proof: the general plan handles any group)."""

Row = tuple[str, str, str, int]
"""An assignment row: ``group_id, member_id, topic, partition``."""

ROW_COLUMNS: tuple[str, ...] = ("group_id", "member_id", "topic", "partition")

DRIVER_PARTITIONS = 200_000
"""A call of at most this many partitions (over its groups) may run the Python algorithm on the driver (see the
module docstring). ``bench/assign_engines.py`` measures where the driver stops paying (docs/assignor-tuning.md)."""


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What is known of one call's input when its engine is chosen."""

    assignor: str
    held: Literal["driver", "spark"]
    """``driver``: the inputs are Python values on the driver (:class:`~groupcoord.assignors.algorithms.Group`);
    ``spark``: they are DataFrames."""
    subscriptions: Subscriptions
    partitions: int | None
    """At most this many partitions over the call's groups; None when no bound is known."""


def choose_engine(facts: Facts, *, driver_partitions: int = DRIVER_PARTITIONS) -> Engine:
    """The engine for a call with ``facts`` (see the module docstring); ``driver_partitions`` is the threshold
    (0: never the driver)."""
    small = facts.partitions is not None and facts.partitions <= driver_partitions and driver_partitions > 0
    if facts.assignor in PYTHON_ASSIGNORS:
        if small and facts.held == "driver":
            return "python"
        if facts.assignor in BALANCED_ASSIGNORS and facts.subscriptions == "heterogeneous":
            return "python" if small else "python tasks"
    return "homogeneous plan" if facts.subscriptions == "homogeneous" else "plan"


def group_facts(assignor: str, groups: Sequence[Group]) -> Facts:
    """The facts of a call whose groups are held on the driver: every partition counted, the declared topic sets
    compared."""
    different = any(len({frozenset(m.topics) for m in group.members}) > 1 for group in groups)
    return Facts(assignor=assignor, held="driver", subscriptions="heterogeneous" if different else "homogeneous",
                 partitions=sum(len(group.partitions) for group in groups))


def frame_facts(assignor: str, members: DataFrame, prepared: Prepared, *, stated: SubscriptionsMode,
                driver_partitions: int) -> tuple[Facts, pa.Table | None]:
    """The facts of a call given as DataFrames, learned as cheaply as they can be, and the call's rows when learning
    them collected it (the driver then assigns it from them).

    ``stated`` is the caller's option: ``"homogeneous"`` is taken as no proof and checks nothing (the general plan
    runs), ``"heterogeneous"`` is taken as said, ``"auto"`` checks. The check needs no job for a constant ``topics``
    column or driver-local members (:mod:`groupcoord.assignors.homogeneity`). Otherwise, when the Python engine may
    assign the call (a balanced assignor, a threshold above 0), the one job that collects a call of at most
    ``driver_partitions`` rows answers it on the driver; past that, or for the other assignors, one small aggregate
    job. A heterogeneous call of a balanced assignor is collected (when that small) to bound its partitions.
    """
    from groupcoord.assignors.homogeneity import declared_heterogeneous, heterogeneous_without_job
    from groupcoord.assignors.python_engine import collect_call, declares_different_topics
    from groupcoord.assignors.schema import GROUP

    if stated == "homogeneous":
        return Facts(assignor=assignor, held="spark", subscriptions="unknown", partitions=None), None
    collects = assignor in BALANCED_ASSIGNORS and driver_partitions > 0
    heterogeneous = True if stated == "heterogeneous" else heterogeneous_without_job(members)
    rows = collect_call(prepared, driver_partitions) if collects and heterogeneous is not False else None
    if heterogeneous is None and rows is not None:
        heterogeneous = declares_different_topics(rows)
    if heterogeneous is None:
        # Collected already (and found too large): its members' normalised frame is planned, and reused.
        heterogeneous = (declared_heterogeneous(prepared.ranked, group=GROUP) if collects
                         else declared_heterogeneous(members))
    return Facts(assignor=assignor, held="spark", subscriptions="heterogeneous" if heterogeneous else "homogeneous",
                 partitions=None if rows is None else rows.num_rows), rows


def assign_groups(assignor: str, groups: Sequence[Group], engine: Engine, *,
                  session: SparkSession | None = None) -> list[Row]:
    """Every group's assignment under ``assignor`` on ``engine`` (chosen from :func:`group_facts`): ``python`` here,
    with no Spark; the others as one call on ``session``, whose inputs are the groups as driver-local frames
    (:func:`~groupcoord.assignors.frames.group_frames`)."""
    if engine == "python":
        return [(group.group_id, member, topic, partition)
                for group in groups for (topic, partition), member in assign(group, assignor).items()]
    if session is None:
        raise ValueError(f"the {engine} engine runs on Spark: give a session")
    from groupcoord.assignors import get_assignor
    from groupcoord.assignors.collect import to_arrow
    from groupcoord.assignors.frames import group_frames

    table = to_arrow(get_assignor(assignor).assign_as(engine, *group_frames(session, groups)))
    return list(zip(*(table[c].to_pylist() for c in ROW_COLUMNS), strict=True))
