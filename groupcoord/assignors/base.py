"""The assignor interface: ``assign(members, partitions, owned)`` on DataFrames, lazy, batched by ``group_id``."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import ClassVar

import pyarrow as pa
from pyspark.sql import DataFrame

from groupcoord.assignors.engine import DRIVER_PARTITIONS, Engine, SubscriptionsMode, choose_engine, frame_facts
from groupcoord.assignors.prepare import Prepared, prepare
from groupcoord.assignors.python_engine import driver_assignment, python_assignment
from groupcoord.assignors.schema import GROUP, normalise_inputs
from groupcoord.plans.lineage import planned, planning

OUTPUT_COLUMNS: tuple[str, ...] = ("member_id", "topic", "partition")

_OUTPUT = ("coalesce(member_id, '') AS member_id", "coalesce(topic, '') AS topic",
           "coalesce(CAST(partition AS int), 0) AS partition")
_BATCHED_OUTPUT = (f"coalesce({GROUP}, '') AS group_id", *_OUTPUT)


class Assignor(ABC):
    """A partition assignor expressed as Spark DataFrame transformations.

    Subclasses implement :meth:`_plan` on :class:`~groupcoord.assignors.prepare.Prepared` frames, returning
    ``_g, member_id, topic, partition``; this class validates the inputs, picks the engine
    (:func:`~groupcoord.assignors.engine.choose_engine`: the plan, or the Python algorithm) and shapes the output.
    """

    name: ClassVar[str]
    rack_aware: bool = True
    """Prefer same-rack members (the assignors that take the option declare it as a field)."""
    subscriptions: SubscriptionsMode = "auto"
    """Whether the call's groups subscribe alike: checked (``auto``), or stated (the balanced assignors' option)."""
    driver_partitions: int = DRIVER_PARTITIONS
    """The threshold of :func:`~groupcoord.assignors.engine.choose_engine` (the balanced assignors' option)."""

    def assign(self, members: DataFrame, partitions: DataFrame, owned: DataFrame | None = None) -> DataFrame:
        """Return the assignment as a lazy DataFrame: ``[group_id,] member_id, topic, partition`` (non-null).

        ``group_id`` leads the output when the inputs carry it (batch mode: each group is assigned independently).
        Schema errors raise :class:`~groupcoord.assignors.errors.AssignorInputError` here; value errors are raised
        when the result is evaluated (or here, when the call is assigned on the driver).
        """
        return self._assign(members, partitions, owned, None)

    def assign_as(self, engine: Engine, members: DataFrame, partitions: DataFrame,
                  owned: DataFrame | None = None) -> DataFrame:
        """:meth:`assign` on ``engine``, chosen by a caller that knows the facts of its inputs already (the
        coordinator's runner, :func:`~groupcoord.assignors.engine.group_facts`): nothing is checked or collected.
        ``homogeneous plan`` must be proven (every group's members declare the same topics); ``python`` needs the
        inputs on the driver, so such a caller runs the algorithm itself
        (:func:`~groupcoord.assignors.engine.assign_groups`)."""
        if engine == "python":
            raise ValueError("assign_as runs a Spark engine; the python engine runs on values held on the driver")
        return self._assign(members, partitions, owned, engine)

    def _assign(self, members: DataFrame, partitions: DataFrame, owned: DataFrame | None,
                engine: Engine | None) -> DataFrame:
        inputs = normalise_inputs(members, partitions, owned)
        # The result's physical plan is made here, under the planning settings: the caller's action on the returned
        # frame then runs that plan (one job over co-partitioned leaves), whatever its own session settings.
        with planning(members.sparkSession, shuffle_partitions=inputs.partition_count,
                      single_task=inputs.single_task):
            prepared = prepare(inputs)
            rows = None
            if engine is None:
                facts, rows = frame_facts(self.name, members, prepared, stated=self.subscriptions,
                                          driver_partitions=self.driver_partitions)
                engine = choose_engine(facts, driver_partitions=self.driver_partitions)
            # Every output value is non-null by construction; coalescing with a literal makes Spark's schema say so.
            result = self._run(engine, prepared, rows).selectExpr(*(_BATCHED_OUTPUT if prepared.batched else _OUTPUT))
            return planned(result)

    def _run(self, engine: Engine, prepared: Prepared, rows: pa.Table | None) -> DataFrame:
        """``_g, member_id, topic, partition`` by ``engine``; ``rows``: the call as collected (the driver's input)."""
        if engine == "python":
            assert rows is not None, "the driver assigns a DataFrame call from its collected rows"
            return driver_assignment(prepared, rows, name=self.name, rack_aware=self.rack_aware)
        if engine == "python tasks":
            return python_assignment(prepared, name=self.name, rack_aware=self.rack_aware)
        return self._plan(dataclasses.replace(prepared, homogeneous=True) if engine == "homogeneous plan" else prepared)

    @abstractmethod
    def _plan(self, prepared: Prepared) -> DataFrame:
        """Compute ``_g, member_id, topic, partition`` from the prepared frames (``prepared.homogeneous``: every
        group's members are proven to declare the same topics)."""
