"""Consumer lag as Spark DataFrame work: committed offsets joined with the log-end offset of every partition.

One DataFrame per checkpoint run, with the columns of the ``offset_checkpoints`` table
(:data:`groupcoord.admin.checkpoint.CHECKPOINT_SCHEMA`); the caller collects it once through Arrow.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa

from groupcoord.admin.log_offsets import TopicPartitionKey
from groupcoord.topics import PartitionOffsets

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

LOG_END_SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("log_end_offset", pa.int64(), nullable=False),
])


def log_end_table(bounds: dict[TopicPartitionKey, PartitionOffsets]) -> pa.Table:
    """The log-end offsets as an Arrow table (``topic``, ``partition``, ``log_end_offset``)."""
    keys = sorted(bounds)
    return pa.table({"topic": [t for t, _ in keys], "partition": [p for _, p in keys],
                     "log_end_offset": [bounds[k].end for k in keys]}, schema=LOG_END_SCHEMA)


def lag_frame(spark: SparkSession, offsets: pa.Table, log_ends: pa.Table, *, run_id: str,
              run_time: dt.datetime) -> DataFrame:
    """Per committed offset: the log-end offset and the lag (``log_end - offset``, at least 0; null when the topic
    is unknown), stamped with the run. ``offsets`` is the ``offsets`` state view."""
    from pyspark.sql import functions as F

    committed = spark.createDataFrame(offsets.select(["group_id", "topic", "partition", "offset", "commit_time"]))
    ends = spark.createDataFrame(log_ends)
    return (
        committed.where(F.col("offset").isNotNull())
        .join(ends, ["topic", "partition"], "left")
        .select(
            F.lit(run_id).alias("run_id"),
            F.lit(run_time).cast("timestamp").alias("run_time"),
            "group_id", "topic", "partition", "offset", "log_end_offset",
            # greatest() skips nulls, so an unknown log-end must stay null explicitly.
            F.when(F.col("log_end_offset").isNotNull(),
                   F.greatest(F.col("log_end_offset") - F.col("offset"), F.lit(0))).cast("long").alias("lag"),
            "commit_time",
        )
    )
