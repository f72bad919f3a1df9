"""The assignors' inputs as driver-local DataFrames, built through Arrow (the coordinator's runner, and the tests).

Arrow gives Spark a local relation whose size the optimiser knows (a small assignment then runs as one task:
:mod:`groupcoord.plans.partitioning`) and whose rows the assignors' checks read without a job
(:mod:`groupcoord.assignors.homogeneity`). A list of tuples would become an RDD of unknown size, deserialised by
Python workers when the job runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from groupcoord.assignors.algorithms import Group

MEMBER_SCHEMA = pa.schema([("group_id", pa.string()), ("member_id", pa.string()), ("group_instance_id", pa.string()),
                           ("topics", pa.list_(pa.string())), ("rack", pa.string())])
PARTITION_SCHEMA = pa.schema([("group_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                              ("racks", pa.list_(pa.string())), ("weight", pa.float64())])
OWNED_SCHEMA = pa.schema([("group_id", pa.string()), ("member_id", pa.string()), ("topic", pa.string()),
                          ("partition", pa.int32()), ("generation", pa.int32())])


def local_frame(spark: SparkSession, rows: list[tuple[Any, ...]], schema: pa.Schema) -> DataFrame:
    """``rows`` as a driver-local frame of ``schema``, through Arrow."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return spark.createDataFrame(pa.table([list(c) for c in columns], schema=schema))


def group_frames(spark: SparkSession, groups: Sequence[Group]) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The batched ``members``, ``partitions`` and ``owned`` inputs of ``groups`` (keyed by their ``group_id``)."""
    members = [(g.group_id, m.member_id, m.group_instance_id, list(m.topics), m.rack)
               for g in groups for m in g.members]
    partitions = [(g.group_id, p.topic, p.partition, list(p.racks) or None, p.weight)
                  for g in groups for p in g.partitions]
    owned = [(g.group_id, c.member_id, c.topic, c.partition, c.generation) for g in groups for c in g.claims]
    return (local_frame(spark, members, MEMBER_SCHEMA), local_frame(spark, partitions, PARTITION_SCHEMA),
            local_frame(spark, owned, OWNED_SCHEMA))
