"""The group's lag as Spark shows it in each query's progress: the reader's ``reportLatestOffset``.

pyspark 4.2's Python stream reader has no custom-metrics hook, but Spark asks it for its *latest* offset after each
``latestOffset`` and puts the answer in the progress (``query.lastProgress["sources"][0]["latestOffset"]``), beside
the batch's ``endOffset``. The source answers with the log ends it planned the batch against, and with the lag of
the query's partitions at that batch's end, computed by the rule of the ``kafka_consumergroup_lag`` metric
(:func:`groupcoord.metrics.consumer_lag.partition_lag`)::

    {"group": "orders-ingest",
     "latest": {"orders": {"0": 1200, "1": 980}},     # log end of each owned partition, when planned
     "lag": {"orders": {"0": 200, "1": 0}},           # log end minus the batch's end offset
     "lagSum": 200}

Before the first plan there is nothing to report (``None``): Spark then leaves ``latestOffset`` out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from kafka.structs import TopicPartition

from groupcoord.metrics.consumer_lag import partition_lag


def lag_report(group_id: str, latest: Mapping[TopicPartition, int],
               positions: Mapping[TopicPartition, int]) -> dict[str, Any]:
    """The ``latestOffset`` document (see the module docs) of ``positions`` (each owned partition's next offset to
    read after the batch) against ``latest`` (their log ends)."""
    ends: dict[str, dict[str, int]] = defaultdict(dict)
    lags: dict[str, dict[str, int]] = defaultdict(dict)
    for tp, position in sorted(positions.items()):
        lag = partition_lag(position, latest.get(tp))
        if lag is None:
            continue
        ends[tp.topic][str(tp.partition)] = latest[tp]
        lags[tp.topic][str(tp.partition)] = lag
    return {"group": group_id, "latest": dict(ends), "lag": dict(lags),
            "lagSum": sum(v for partitions in lags.values() for v in partitions.values())}
