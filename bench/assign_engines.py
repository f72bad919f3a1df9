"""Where the driver's Python engine stops paying: the coordinator's runner on the driver against the same runner on
Spark, same batches, same process (issue 20; sets :data:`groupcoord.assignors.engine.DRIVER_PARTITIONS`).

Each case is a batch of ``NeedsAssignment`` effects, as the coordinator hands them over: fresh groups (nothing owned)
and the rebalance after one member joined (every other member owning its share of the fresh answer), every member on
every topic (``homogeneous``) or on a random half of them (``heterogeneous``). Both engines run through
:class:`~groupcoord.assignment.runner.SparkAssignmentRunner` (``driver_partitions`` above the size, or 0), encoding
included; Spark is warm (each assignor ran twice at the size first). The answers of both engines are compared.
"""

from __future__ import annotations

import functools
import random
import statistics
import time
from typing import Any

from bench.results_io import write_result
from groupcoord.coordinator.effects import AssignmentMember, NeedsAssignment
from groupcoord.protocol.consumer_protocol import TopicPartitions, decode_assignment

ASSIGNORS = ("cooperative-sticky", "range")
QUICK = ((1, 10, 100, 10), (1, 100, 10_000, 100), (100, 10, 100, 10), (1, 1000, 100_000, 100),
         (1, 2000, 200_000, 200))
FULL = (*QUICK, (1, 2000, 500_000, 500))
"""(groups, members per group, partitions per group, topics): the quick run brackets ``DRIVER_PARTITIONS``."""
HETEROGENEOUS_MAX_BUCKET = 100_000
"""Heterogeneous cases run up to this many partitions per bucket: both engines run the same Python global balance
for them, whose rebalance takes seconds at 100k x 1,000 (was 28 s at 10k x 100 until 2026-11-26), so a larger case
would time that algorithm for minutes without telling the engines apart."""


def crossover(rows: list[dict[str, Any]]) -> dict[str, dict[str, int | None]]:
    """Per assignor and subscriptions: the largest bucket (partitions over its groups) where the driver beat warm
    Spark both fresh and on the rebalance, and the smallest where Spark was faster in either (None: not seen)."""
    result: dict[str, dict[str, int | None]] = {}
    for row in sorted(rows, key=lambda r: r["groups"] * r["partitions"]):
        bucket = row["groups"] * row["partitions"]
        entry = result.setdefault(f"{row['assignor']} {row['subscriptions']}",
                                  {"driver_faster_up_to": None, "spark_faster_from": None})
        driver_wins = (row["python_fresh_s"] <= row["spark_fresh_s"]
                       and row["python_rebalance_s"] <= row["spark_rebalance_s"])
        if driver_wins and entry["spark_faster_from"] is None:
            entry["driver_faster_up_to"] = bucket
        elif not driver_wins and entry["spark_faster_from"] is None:
            entry["spark_faster_from"] = bucket
    return result


def _batch(groups: int, members: int, partitions: int, topics: int, *, heterogeneous: bool,
           assignor: str) -> list[NeedsAssignment]:
    rng = random.Random(7)
    names = [f"t{t}" for t in range(topics)]
    batch = []
    for g in range(groups):
        subs = [tuple(t for t in names if rng.random() < 0.5) or (names[i % topics],) if heterogeneous
                else tuple(names) for i in range(members)]
        batch.append(NeedsAssignment(
            group_id=f"g{g}", generation_id=1, protocol_name=f"server-{assignor}", assignor=assignor,
            members=tuple(AssignmentMember(member_id=f"member-{i}", group_instance_id=None, topics=subs[i], owned=(),
                                           metadata=b"") for i in range(members))))
    return batch


def _rebalance(batch: list[NeedsAssignment], answers: list[Any]) -> list[NeedsAssignment]:
    """Each group one generation later: every member owning what it was given, and a new member on all topics."""
    by_group = {a.group_id: a for a in answers}
    result = []
    for effect in batch:
        given = by_group[effect.group_id].assignments
        members = tuple(AssignmentMember(member_id=m.member_id, group_instance_id=None, topics=m.topics, metadata=b"",
                                         owned=tuple(TopicPartitions(tp.topic, tp.partitions)
                                                     for tp in decode_assignment(given[m.member_id]).partitions))
                        for m in effect.members)
        topics = tuple(sorted({t for m in effect.members for t in m.topics or ()}))
        joined = AssignmentMember(member_id="member-new", group_instance_id=None, topics=topics, owned=(), metadata=b"")
        result.append(NeedsAssignment(group_id=effect.group_id, generation_id=2, protocol_name=effect.protocol_name,
                                      assignor=effect.assignor, members=(*members, joined)))
    return result


def _timed(runner: Any, batch: list[NeedsAssignment], repeats: int) -> tuple[float, list[Any]]:
    seconds, answers = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        answers = runner.assign(batch)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), answers


def main(full: bool) -> None:
    """Time both engines on every case; write ``bench/results/assign_engines.json``."""
    from groupcoord.assignment.runner import SparkAssignmentRunner
    from groupcoord.spark.session import local_session

    spark = local_session(master="local[*]", app_name="groupcoord-bench-engines", shuffle_partitions=4,
                          extra={"spark.driver.memory": "6g"})
    rows = []
    for groups, members, partitions, topics in FULL if full else QUICK:
        counts = {f"t{t}": partitions // topics for t in range(topics)}
        driver = SparkAssignmentRunner(functools.partial(dict, counts), session=lambda: spark,
                                       driver_partitions=10**9)
        on_spark = SparkAssignmentRunner(functools.partial(dict, counts), session=lambda: spark, driver_partitions=0)
        for heterogeneous in (False, True):
            for assignor in ASSIGNORS:
                if heterogeneous and (assignor == "range" or groups * partitions > HETEROGENEOUS_MAX_BUCKET):
                    continue
                fresh = _batch(groups, members, partitions, topics, heterogeneous=heterogeneous, assignor=assignor)
                python_s, answers = _timed(driver, fresh, 3)
                rebalance = _rebalance(fresh, answers)
                python_rebalance_s, python_answers = _timed(driver, rebalance, 3)
                _timed(on_spark, fresh, 2)  # warm-up at this size
                spark_s, spark_answers = _timed(on_spark, fresh, 3)
                _timed(on_spark, rebalance, 1)
                spark_rebalance_s, spark_rebalance = _timed(on_spark, rebalance, 3)
                same = (sorted(map(repr, answers)) == sorted(map(repr, spark_answers))
                        and sorted(map(repr, python_answers)) == sorted(map(repr, spark_rebalance)))
                rows.append({"assignor": assignor, "subscriptions": "heterogeneous" if heterogeneous else
                             "homogeneous", "groups": groups, "members": members, "partitions": partitions,
                             "python_fresh_s": round(python_s, 3), "spark_fresh_s": round(spark_s, 3),
                             "python_rebalance_s": round(python_rebalance_s, 3),
                             "spark_rebalance_s": round(spark_rebalance_s, 3), "same_answers": same})
                print(rows[-1], flush=True)
    from groupcoord.assignors.engine import DRIVER_PARTITIONS

    write_result("assign_engines", title="Server-side assignment: the driver's Python engine vs Spark (warm)",
                 rows=rows, summary={"DRIVER_PARTITIONS": DRIVER_PARTITIONS, "crossover": crossover(rows)},
                 notes=("The coordinator's runner (SparkAssignmentRunner.assign, encoding included) on the same "
                        "batches with the Python engine and with every bucket on Spark (warm: two untimed calls at "
                        "each size first); p50 of 3. fresh: nothing owned; rebalance: one member joined, the others "
                        "owning the fresh answer. partitions are per group. same_answers: both engines answered "
                        f"byte for byte alike. Heterogeneous cases up to {HETEROGENEOUS_MAX_BUCKET:,} partitions a "
                        "bucket (both engines run the same Python global balance for them)."))
