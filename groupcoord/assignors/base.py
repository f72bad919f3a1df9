"""The assignor interface: ``assign(members, partitions, owned)`` on DataFrames, lazy, batched by ``group_id``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from pyspark.sql import DataFrame

from groupcoord.assignors.homogeneity import declared_heterogeneous
from groupcoord.assignors.prepare import Prepared, prepare
from groupcoord.assignors.schema import GROUP, normalise_inputs
from groupcoord.plans.lineage import planned, planning

OUTPUT_COLUMNS: tuple[str, ...] = ("member_id", "topic", "partition")

_OUTPUT = ("coalesce(member_id, '') AS member_id", "coalesce(topic, '') AS topic",
           "coalesce(CAST(partition AS int), 0) AS partition")
_BATCHED_OUTPUT = (f"coalesce({GROUP}, '') AS group_id", *_OUTPUT)


class Assignor(ABC):
    """A partition assignor expressed as Spark DataFrame transformations.

    Subclasses implement :meth:`_assign` on :class:`~groupcoord.assignors.prepare.Prepared` frames, returning
    ``_g, member_id, topic, partition``; this class validates the inputs and shapes the output.
    """

    name: ClassVar[str]
    homogeneous_plan: ClassVar[bool] = False
    """Whether ``_assign`` has a cheaper plan for calls proven homogeneous (``Prepared.homogeneous``)."""

    def assign(self, members: DataFrame, partitions: DataFrame, owned: DataFrame | None = None) -> DataFrame:
        """Return the assignment as a lazy DataFrame: ``[group_id,] member_id, topic, partition`` (non-null).

        ``group_id`` leads the output when the inputs carry it (batch mode: each group is assigned independently).
        Schema errors raise :class:`~groupcoord.assignors.errors.AssignorInputError` here; value errors are raised
        when the result is evaluated.
        """
        inputs = normalise_inputs(members, partitions, owned)
        # The result's physical plan is made here, under the planning settings: the caller's action on the returned
        # frame then runs that plan (one job over co-partitioned leaves), whatever its own session settings.
        with planning(members.sparkSession, shuffle_partitions=inputs.partition_count,
                      single_task=inputs.single_task):
            prepared = prepare(inputs, homogeneous=self._homogeneity_proven(members))
            # Every output value is non-null by construction; coalescing with a literal makes Spark's schema say so.
            result = self._assign(prepared).selectExpr(*(_BATCHED_OUTPUT if prepared.batched else _OUTPUT))
            return planned(result)

    def _homogeneity_proven(self, members: DataFrame) -> bool:
        """Whether this call may rely on every group's members declaring the same topics (see ``prepare``): only
        asked (and then checked, :mod:`groupcoord.assignors.homogeneity`) when the assignor has such a plan."""
        return self.homogeneous_plan and not declared_heterogeneous(members)

    @abstractmethod
    def _assign(self, prepared: Prepared) -> DataFrame:
        """Compute ``_g, member_id, topic, partition`` from the prepared frames."""
