"""Server-side assignment: every pending ``server-<assignor>`` group of one moment, on the driver or in one Spark job.

The host hands :class:`SparkAssignmentRunner` a list of ``NeedsAssignment`` effects. Groups are bucketed by
assignor name, and each bucket's groups are built once, as the assignors' input values
(:class:`~groupcoord.assignors.algorithms.Group`). The assignors pick the bucket's engine from its facts
(:func:`groupcoord.assignors.engine.choose_engine`: how many partitions, whether the members subscribe alike): the
Python algorithm right here, with no Spark at all, or one Spark call in the assignors' ``group_id`` batch mode, whose
output comes back through Arrow. Either way the rows are encoded as ConsumerProtocol Assignments per member.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from groupcoord.assignment.targets import target_answer, target_group
from groupcoord.assignment.weights import PartitionKey, read_partition_weights, weight_of
from groupcoord.assignors.engine import DRIVER_PARTITIONS
from groupcoord.coordinator.effects import (
    CompleteAssignment,
    CompleteTargetAssignment,
    E,
    NeedsAssignment,
    NeedsTargetAssignment,
    newest_per_group,
)
from groupcoord.protocol.consumer_protocol import Assignment, TopicPartitions, encode_assignment
from groupcoord.protocol.errors import Errors
from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import Where
from groupcoord.topics import TopicCatalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.assignors.algorithms import Group
    from groupcoord.assignors.engine import Engine, Row

log = logging.getLogger("groupcoord.assignment.runner")

_WARMED_CONTEXTS: set[str] = set()
"""Application ids of the SparkContexts whose planner was warmed (see :meth:`SparkAssignmentRunner.warm_up`)."""


def spark_assignment_runner(root: StateRoot, *, spark: SparkSession | Callable[[], SparkSession],
                            warm_up: bool = False, offered: Sequence[str] | None = None) -> SparkAssignmentRunner:
    """The batched Spark assignment runner over ``root``'s topic catalog and partition weights, on ``spark`` (a
    session, or a function that returns one, called at the first assignment that needs Spark:
    :func:`groupcoord.spark.session.active_or_local_session` for ``serve``). Hosts take it as their
    ``assignment_runner``.

    ``warm_up`` starts warming the planner at once on a background thread (``spark.groupcoord.assignor.warmup``);
    without it, building the runner loads no Spark. ``offered``, the protocols the coordinator's groups offer when
    they are known (a job's driver), narrows the warm-up to the plans they would run on Spark for the catalog's
    partitions (:func:`~groupcoord.assignment.warmup.plans_to_warm`): often none.
    """
    from groupcoord.assignment.warmup import plans_to_warm

    catalog = TopicCatalog(root)
    session: Callable[[], SparkSession] = spark if callable(spark) else (lambda: spark)
    runner = SparkAssignmentRunner(catalog.partition_counts, session=session, weights_path=root.partition_weights_path)
    if warm_up:
        plans = plans_to_warm(offered, sum(catalog.partition_counts().values()))
        if plans:
            runner.start_warm_up(plans)
        else:
            log.info("no planner warm-up: the groups' assignors %s run on the driver", ", ".join(offered or ()))
    return runner


def driver_assignment_runner(root: StateRoot) -> SparkAssignmentRunner:
    """A runner over ``root``'s catalog and partition weights that never starts Spark (``serve --no-spark``)."""
    return driver_only_runner(TopicCatalog(root).partition_counts, weights_path=root.partition_weights_path)


def driver_only_runner(partition_counts: Callable[[], Mapping[str, int]], *,
                       weights_path: Where | None = None) -> SparkAssignmentRunner:
    """A runner that never starts Spark: every group on the assignors' Python engine; an assignor without one
    (``weighted``) fails its groups with UNKNOWN_SERVER_ERROR, saying so in the log."""
    return SparkAssignmentRunner(partition_counts, session=_no_spark, weights_path=weights_path,
                                 driver_partitions=sys.maxsize)


def _no_spark() -> SparkSession:
    raise RuntimeError("this assignment needs Spark, and this coordinator runs without it (serve --no-spark)")


class SparkAssignmentRunner:
    """Computes server-side assignments with the assignors.

    ``partition_counts`` returns the current topic catalog (topic -> partitions); ``racks`` optionally returns
    each topic's per-partition racks; ``weights_path`` is the checkpoint job's ``partition_weights`` table, read
    once per call that has a bucket whose assignor weighs partitions (:mod:`groupcoord.assignment.weights`; unmeasured
    partitions weigh 1.0). ``driver_partitions`` is the assignors' threshold for the Python engine on the driver
    (:data:`~groupcoord.assignors.engine.DRIVER_PARTITIONS`; 0 sends every bucket to Spark). The SparkSession is
    obtained lazily, on the first bucket that needs it.
    """

    def __init__(
        self,
        partition_counts: Callable[[], Mapping[str, int]],
        *,
        session: Callable[[], SparkSession],
        racks: Callable[[str], Sequence[Sequence[str]] | None] | None = None,
        weights_path: Where | None = None,
        driver_partitions: int = DRIVER_PARTITIONS,
    ) -> None:
        self._partition_counts = partition_counts
        self._driver_partitions = driver_partitions
        self._session_factory = session
        self._session: SparkSession | None = None
        self._racks = racks
        self._weights_path = weights_path
        self._lock = threading.Lock()  # one assignment at a time: a real call, or a warm-up call
        self._busy = 0  # real calls waiting for the lock or running: the warm-up waits for them
        self._warm_up_stopped = threading.Event()

    def start_warm_up(self, assignors: Sequence[str] | None = None) -> threading.Thread:
        """Warm Spark's planner on a daemon thread (:mod:`groupcoord.assignment.warmup`) for ``assignors`` (default:
        :data:`~groupcoord.assignment.warmup.WARMUP_ORDER`); returns the thread."""
        thread = threading.Thread(target=self.warm_up, kwargs={"assignors": assignors}, name="assignor-warm-up",
                                  daemon=True)
        thread.start()
        return thread

    def stop_warm_up(self) -> None:
        """Make a warm-up under way stop after its current call."""
        self._warm_up_stopped.set()

    def warm_up(self, *, again: bool = False, assignors: Sequence[str] | None = None) -> int:
        """Blocking form of :meth:`start_warm_up`: returns the number of warm-up assignments made.

        The JVM stays warm for the life of its SparkContext, so a context that was warmed once (by any runner of
        this process) is not warmed again unless ``again``.
        """
        from groupcoord.assignment.warmup import WARMUP_ORDER, WARMUP_PARTITIONS, WARMUP_TOPIC, warm_up
        from groupcoord.assignors.engine import assign_groups, choose_engine, group_facts

        with self._lock:
            session = self._ensure_session()
        context = session.sparkContext.applicationId
        if context in _WARMED_CONTEXTS and not again:
            return 0
        _WARMED_CONTEXTS.add(context)

        def assign_one(effect: NeedsAssignment) -> None:
            groups = [self._group(effect, {WARMUP_TOPIC: WARMUP_PARTITIONS}, {})]
            engine = choose_engine(group_facts(effect.assignor, groups), driver_partitions=0)  # Spark's plans
            with self._lock:
                assign_groups(effect.assignor, groups, engine, session=session)

        return warm_up(assign_one, busy=lambda: self._busy > 0, stopped=self._warm_up_stopped.is_set,
                       assignors=WARMUP_ORDER if assignors is None else assignors)

    def _ensure_session(self) -> SparkSession:
        if self._session is None:
            self._session = self._session_factory()
        return self._session

    async def __call__(self, batch: Sequence[NeedsAssignment]) -> list[CompleteAssignment]:
        """Assign every group of ``batch``; runs the Spark work off the event loop."""
        return await asyncio.to_thread(self.assign, batch)

    def assign(self, batch: Sequence[NeedsAssignment]) -> list[CompleteAssignment]:
        """Blocking form of :meth:`__call__`: per assignor name used in ``batch``, the engine the assignors pick
        (only the newest generation of each group is assigned; older ones could not complete anyway)."""
        effects, answers = _known_assignors(newest_per_group(batch))
        if not effects:
            return answers
        counts = dict(self._partition_counts())
        weights = self._weights(effects)
        rows = self._assign_groups([(e.assignor, self._group(e, counts, weights)) for e in effects])
        return [*answers, *_answers(effects, rows)]

    async def targets(self, batch: Sequence[NeedsTargetAssignment]) -> list[CompleteTargetAssignment]:
        """Consumer groups' target assignments (KIP-848) for every group of ``batch``, off the event loop: the
        host's ``target_assignment_runner``."""
        return await asyncio.to_thread(self.assign_targets, batch)

    def assign_targets(self, batch: Sequence[NeedsTargetAssignment]) -> list[CompleteTargetAssignment]:
        """Blocking form of :meth:`targets`: the same assignors and engines as :meth:`assign`, each group's
        partitions by topic id per member."""
        effects, answers = _known_assignors(newest_per_group(batch))
        if not effects:
            return answers
        weights = self._weights(effects)
        rows = self._assign_groups([(e.assignor, target_group(e, weights, self._racks)) for e in effects])
        return [*answers, *(target_answer(e, rows.get(e.group_id, ())) for e in effects)]

    def _weights(self, effects: Sequence[NeedsAssignment] | Sequence[NeedsTargetAssignment]) -> dict[
            PartitionKey, float]:
        """The measured weights of the groups whose assignor weighs partitions (none read when no group does)."""
        from groupcoord.assignors import WEIGHING_ASSIGNORS

        weighed = {e.group_id for e in effects if e.assignor in WEIGHING_ASSIGNORS}
        return read_partition_weights(self._weights_path, weighed) if self._weights_path and weighed else {}

    def _assign_groups(self, calls: Sequence[tuple[str, Group]]) -> dict[str, list[Row]]:
        """Every group's output rows (``group_id, member_id, topic, partition``), by group id: the groups of one
        assignor in one call, on the engine the assignors pick for it (Spark's only under the runner's lock)."""
        from groupcoord.assignors.engine import assign_groups, choose_engine, group_facts

        buckets: dict[str, list[Group]] = defaultdict(list)
        for name, group in calls:
            buckets[name].append(group)
        rows: list[Row] = []
        on_spark: list[tuple[str, list[Group], Engine]] = []
        for name, groups in buckets.items():
            engine = choose_engine(group_facts(name, groups), driver_partitions=self._driver_partitions)
            if engine != "python":
                on_spark.append((name, groups, engine))
                continue
            started = time.perf_counter()
            rows.extend(assign_groups(name, groups, engine))
            log.info("assigned group(s) with server-%s on the driver in %.3f s", name, time.perf_counter() - started)
        if on_spark:
            self._busy += 1
            try:
                with self._lock:
                    session = self._ensure_session()
                    for name, groups, engine in on_spark:
                        started = time.perf_counter()
                        rows.extend(assign_groups(name, groups, engine, session=session))
                        log.info("assigned %d group(s) with server-%s in %.3f s", len(groups), name,
                                 time.perf_counter() - started)
            finally:
                self._busy -= 1
        by_group: dict[str, list[Row]] = defaultdict(list)
        for row in rows:
            by_group[row[0]].append(row)
        return by_group

    def _group(self, effect: NeedsAssignment, counts: Mapping[str, int],
               weights: Mapping[PartitionKey, float]) -> Group:
        """``effect``'s group as the assignors' input: its members, every partition of the topics they want (with
        their racks and weights), and what each member owns, claimed in the generation before this one."""
        from groupcoord.assignors.algorithms import Claim, Group, Member, Partition

        members: list[Member] = []
        claims: list[Claim] = []
        wanted: set[str] = set()
        for member in effect.members:
            topics = tuple(member.topics or ())
            wanted.update(topics)
            members.append(Member(member.member_id, topics, member.group_instance_id))
            claims.extend(Claim(member.member_id, tp.topic, p, effect.generation_id - 1)
                          for tp in member.owned for p in tp.partitions)
        partitions: list[Partition] = []
        for topic in sorted(wanted):
            racks = self._racks(topic) if self._racks else None
            partitions.extend(Partition(topic, p, tuple(racks[p]) if racks else (),
                                        weight_of(weights, effect.group_id, topic, p))
                              for p in range(counts.get(topic, 0)))
        return Group(tuple(members), tuple(partitions), tuple(claims), effect.group_id)


def _answers(effects: Sequence[NeedsAssignment], rows: Mapping[str, Sequence[Row]]) -> list[CompleteAssignment]:
    """Each group's output rows (``group_id, member_id, topic, partition``) as encoded Assignments per member."""
    answers = []
    for effect in effects:
        by_member: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for _, member_id, topic, partition in rows.get(effect.group_id, ()):
            by_member[member_id][topic].append(partition)
        assignments = {}
        for member in effect.members:
            topics = by_member.get(member.member_id, {})
            assignment = Assignment(
                partitions=tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(topics.items()))
            )
            assignments[member.member_id] = encode_assignment(assignment)
        answers.append(CompleteAssignment(group_id=effect.group_id, generation_id=effect.generation_id,
                                          assignments=assignments))
    return answers


def _known_assignors(effects: Sequence[E]) -> tuple[list[E], list[Any]]:
    """``effects`` whose assignor exists, and the failed answers (INCONSISTENT_GROUP_PROTOCOL) of the others."""
    from groupcoord.assignors import ASSIGNOR_NAMES

    known, answers = [], []
    for effect in effects:
        if effect.assignor in ASSIGNOR_NAMES:
            known.append(effect)
        else:
            log.warning("group %s asks for unknown server-side assignor %r", effect.group_id, effect.assignor)
            answers.append(effect.failed(Errors.INCONSISTENT_GROUP_PROTOCOL))
    return known, answers
