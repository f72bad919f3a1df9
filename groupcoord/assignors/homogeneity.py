"""Whether an ``assign`` call may rely on homogeneous subscriptions: every group's members declare the same topics.

Every assignor has a cheaper plan for that case (``Prepared.homogeneous``): it takes a group's topics from one
member instead of a row per member and topic (2 million rows for 2,000 members of 1,000 topics). The answer is
decided on the driver, before planning (:func:`groupcoord.assignors.engine.frame_facts`):

- the ``topics`` column is a constant in the optimised plan (the benchmarks' generated inputs): yes, and no job;
- the members frame is driver-local (``DataFrame.isLocal()``): its ``group_id`` and ``topics`` are collected
  without a job (small bookkeeping: one row per member);
- otherwise the balanced assignors first collect a small call whole (one job) and answer on the driver; for a
  larger call, or without that, one small job over the members frame alone (group, sorted distinct topics) answers
  it: one global aggregate, collected under the assignors' planning settings
  (:func:`groupcoord.plans.lineage.planning`: adaptive execution off, so that the aggregate is one job).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from groupcoord import plans as plan
from groupcoord.plans.lineage import planning


def declared_heterogeneous(members: DataFrame, *, group: str = "group_id") -> bool:
    """Whether some group's members declare different topic lists (as sets); ``group`` names the group column.

    A superset of the heterogeneous groups: a topic that does not exist can make declared lists differ while the
    existing subscriptions agree; the plan then finds the group homogeneous and gives it the homogeneous target. Inputs
    with a bad ``topics`` column answer False here and are rejected by the input validation.
    """
    known = heterogeneous_without_job(members, group=group)
    if known is not None:
        return known
    most = _declared(members, group).groupBy("g").agg(F.countDistinct("t").alias("_n")).agg(F.max("_n").alias("_most"))
    session = members.sparkSession
    shuffle_partitions = int(session.conf.get("spark.sql.shuffle.partitions") or "200")
    with planning(session, shuffle_partitions=shuffle_partitions):
        (row,) = most.collect()
    return (row["_most"] or 0) > 1


def heterogeneous_without_job(members: DataFrame, *, group: str = "group_id") -> bool | None:
    """:func:`declared_heterogeneous` when it needs no Spark job (a constant ``topics`` column, or a driver-local
    members frame); None when only a job can tell."""
    fields = {field.name: field.dataType for field in members.schema.fields}
    if not isinstance(fields.get("topics"), T.ArrayType) or plan.is_constant_column(members, "topics"):
        return False
    if members.isLocal():
        seen: dict[object, object] = {}
        return any(seen.setdefault(row["g"], row["t"]) != row["t"] for row in _declared(members, group).collect())
    return None


def _declared(members: DataFrame, group: str) -> DataFrame:
    """``g, t``: each member's group and its sorted distinct topics."""
    group_column = F.col(group).cast("string") if group in members.columns else F.lit("")
    # A null list subscribes to nothing, like an empty one (and countDistinct would not count a null).
    topic_set = F.coalesce(F.sort_array(F.array_distinct("topics")), F.array().cast("array<string>"))
    return members.select(group_column.alias("g"), topic_set.alias("t"))
