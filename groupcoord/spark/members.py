"""Spark executors as group members: ``run_members`` runs N long-running member tasks in one Spark job.

::

    result = run_members(spark, "orders-ingest", ["orders"], 3, work, state_root="/data/gc",
                         session_timeout_ms=10000, heartbeat_interval_ms=1000)

What it does:

1. **Coordinator.** With a state root (``state_root=`` or ``spark.groupcoord.state.root``) it starts a
   :class:`~groupcoord.host.background.BackgroundCoordinator` in the driver, bound to ``spark.driver.host`` as a
   numeric address (``127.0.0.1`` in local mode; a loopback one is refused unless the master is on loopback too:
   :mod:`groupcoord.spark.driver_address`) on a free port unless ``spark.groupcoord.listen`` is set, with server-side
   assignment on this SparkSession. When another process already holds the live lease, it uses that coordinator
   and stands by to take it over (a restarted driver finds its dead predecessor's lease live for a while). The
   members find the coordinator through the lease table, so they follow a failover. Without a state root,
   ``bootstrap_servers=`` names a coordinator to use and none is started.
2. **Slots.** It needs ``num_members + spark.groupcoord.assignor.reserved.slots`` task slots: the members hold
   theirs for the whole run, and the coordinator's assignment jobs need at least one more. With fewer it fails at
   once, naming both numbers. ``spark.speculation=true`` is refused (a speculative copy would be a second member).
3. **Members.** One Spark job with ``num_members`` tasks. Task ``i`` is a :class:`~groupcoord.member.GroupMember`
   with ``group_instance_id = f"{prefix}-{i}"`` (static membership; ``prefix`` is ``spark.groupcoord.instance.prefix``,
   by default ``spark.app.name``), so a task Spark retries rejoins as the same member. It calls
   ``member.poll(poll_timeout_ms)`` and then ``work(member, assignment)`` in a loop until ``work`` returns False;
   then it closes the member (LeaveGroup with its instance id) and reports a :class:`MemberResult`.

The ``work`` contract: ``work(member: GroupMember, assignment: frozenset[TopicPartition]) -> bool``.

- It is pickled with cloudpickle and unpickled once per task (attempt): keep per-member state on the object,
  created lazily inside the task; a function or an instance of a class importable on the executors both work.
- Each call must return within the member's rebalance timeout (the next ``poll`` runs the rebalance callbacks).
- Return True to be called again, False to leave the group and end the task. An exception fails the task; Spark
  retries it (``spark.task.maxFailures``) and the retry rejoins under the same instance id.

``member_options`` go to :class:`~groupcoord.member.GroupMember` (``session_timeout_ms``, ``heartbeat_interval_ms``,
``rebalance_timeout_ms``, ``assignors`` (default ``("server-cooperative-sticky",)``), ``enable_auto_commit``,
``pattern`` (with ``topics=None``), ``listener``, ``options``), except three read here: ``state_root``,
``bootstrap_servers`` and ``poll_timeout_ms`` (default 1000). ``options`` defaults to the
``spark.groupcoord.member.*`` keys of the Spark conf.

Executor loss reaches the coordinator as session expiry; the other members take the lost member's partitions over.
Interrupting the driver (KeyboardInterrupt) cancels the member job; its members then expire by session timeout.
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from kafka.structs import TopicPartition

from groupcoord.config import Config, full_name, resolve_config
from groupcoord.member import GroupMember, GroupMemberSettings, MemberOptions
from groupcoord.member.config import DEFAULT_ASSIGNORS
from groupcoord.spark.driver_address import coordinator_endpoint
from groupcoord.state_root import StateRoot, StateRootError

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from groupcoord.host.background import BackgroundCoordinator

log = logging.getLogger("groupcoord.spark.members")

Work = Callable[[GroupMember, frozenset[TopicPartition]], bool]
"""A member task's body: called after each ``poll`` with the current assignment; False leaves the group."""

DEFAULT_POLL_TIMEOUT_MS = 1000
COORDINATOR_START_TIMEOUT_S = 60.0

_LOCAL_MASTER = re.compile(r"local(?:\[(\*|\d+)(?:\s*,\s*\d+)?\])?")
_LOCAL_CLUSTER_MASTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]")


class RunMembersOptions(GroupMemberSettings, total=False):
    """``run_members``'s keyword-only member options: every :class:`GroupMember` setting, and the poll timeout."""

    poll_timeout_ms: int
    """How long each member task's ``poll`` waits for records (default :data:`DEFAULT_POLL_TIMEOUT_MS`)."""


class RunMembersError(RuntimeError):
    """``run_members`` cannot run as configured; the message says why in one line."""


@dataclass(frozen=True, kw_only=True)
class MemberResult:
    """How one member task ended (the attempt that finished, when Spark retried it)."""

    index: int
    group_instance_id: str
    member_id: str
    generation_id: int
    attempt: int
    iterations: int
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True, kw_only=True)
class MembersResult:
    """What ``run_members`` returns: one :class:`MemberResult` per task, in task-index order."""

    group_id: str
    coordinator: str | None
    started_coordinator: bool
    """Whether this driver's coordinator served when the members started (else it stood by behind another)."""
    members: tuple[MemberResult, ...]
    elapsed_s: float

    @property
    def iterations(self) -> int:
        """Calls of ``work`` summed over the members (of their final attempts)."""
        return sum(m.iterations for m in self.members)


@dataclass(frozen=True, kw_only=True)
class _TaskSpec:
    """What every member task needs; built on the driver, pickled to the executors."""

    group_id: str
    topics: tuple[str, ...] | None
    prefix: str
    poll_timeout_ms: int
    member_kwargs: Mapping[str, Any] = field(default_factory=dict)
    storage: Mapping[str, str] = field(default_factory=dict)
    """The state root's ``storage.*`` settings when it is on S3 (never secrets: each executor has its own)."""


def run_members(spark: SparkSession, group_id: str, topics: Sequence[str] | None, num_members: int, work: Work,
                *, config: Config | None = None, **member_options: Unpack[RunMembersOptions]) -> MembersResult:
    """Run ``num_members`` executor tasks as members of ``group_id`` until each one's ``work`` returns False.

    See the module docstring for the coordinator, the slot rule, the ``work`` contract and ``member_options``.
    ``config`` replaces the ``spark.groupcoord.*`` keys resolved from the Spark conf (the CLI resolves flags on top).
    Raises :class:`RunMembersError` for a configuration that cannot work (too few slots, speculation on, no
    coordinator to reach); a member task that keeps failing fails the Spark job, which is raised as Spark raises it.
    """
    started = time.monotonic()
    sc = spark.sparkContext
    config = config if config is not None else resolve_config(spark_conf=sc.getConf().getAll())
    if num_members < 1:
        raise RunMembersError(f"run_members needs at least one member, got {num_members}")
    _check_speculation(sc)
    _check_slots(sc, num_members, config["assignor.reserved.slots"])
    poll_timeout_ms = int(member_options.pop("poll_timeout_ms", DEFAULT_POLL_TIMEOUT_MS))
    state_root = member_options.pop("state_root", None) or config["state.root"]
    member_options.setdefault("options", MemberOptions.from_config(config))
    if state_root is None and member_options.get("bootstrap_servers") is None:
        raise RunMembersError(f"run_members needs a state root ({full_name('state.root')} or state_root=...) or "
                              "bootstrap_servers=... naming a running coordinator")
    root = _open_root(state_root, config.section("storage.")) if state_root is not None else None
    spec = _TaskSpec(
        group_id=group_id, topics=tuple(topics) if topics is not None else None,
        prefix=str(config["instance.prefix"] or sc.appName), poll_timeout_ms=poll_timeout_ms,
        member_kwargs={**member_options, **({"state_root": root.location.uri} if root is not None else {})},
        storage=dict(root.location.settings) if root is not None else {},
    )
    _build_member(spec, 0).close()  # argument errors surface here, on the driver, not in every task
    coordinator: BackgroundCoordinator | None = None
    address = None
    serving = False
    if root is not None:
        offered = member_options.get("assignors") or DEFAULT_ASSIGNORS
        coordinator, address, serving = _ensure_coordinator(spark, config, root, offered)
    try:
        results = _run_member_job(sc, spec, num_members, work)
    finally:
        if coordinator is not None:
            coordinator.stop()
    return MembersResult(group_id=group_id, coordinator=address, started_coordinator=serving,
                         members=tuple(sorted(results, key=lambda r: r.index)),
                         elapsed_s=time.monotonic() - started)


# --- driver-side checks -------------------------------------------------------------------------------------------

def task_slots(sc: SparkContext) -> int:
    """How many tasks can run at once: ``N`` of ``local[N]``/``local[N,F]`` (cores for ``*``), workers x cores of
    ``local-cluster``, else registered executors x ``spark.executor.cores``, each divided by ``spark.task.cpus``;
    ``sc.defaultParallelism`` while the executors or their cores are unknown."""
    master = sc.master or ""
    conf = sc.getConf()
    task_cpus = int(conf.get("spark.task.cpus", "1") or 1)
    local = _LOCAL_MASTER.fullmatch(master)
    if local is not None:
        threads = local.group(1) or "1"
        return ((os.cpu_count() or 1) if threads == "*" else int(threads)) // task_cpus
    cluster = _LOCAL_CLUSTER_MASTER.fullmatch(master)
    if cluster is not None:
        return int(cluster.group(1)) * int(cluster.group(2)) // task_cpus
    executor_cores = conf.get("spark.executor.cores")
    from groupcoord.plans import registered_executors  # loads pyspark, which this module imports lazily

    executors = registered_executors(sc)
    if executor_cores and executors is not None and executors > 0:
        return executors * int(executor_cores) // task_cpus
    return int(sc.defaultParallelism)


def _check_slots(sc: SparkContext, num_members: int, reserved: int) -> None:
    slots, needed = task_slots(sc), num_members + reserved
    if slots < needed:
        raise RunMembersError(
            f"run_members needs {needed} task slots ({num_members} members + {reserved} reserved for the assignor, "
            f"{full_name('assignor.reserved.slots')}) but {sc.master} has {slots}")


def _check_speculation(sc: SparkContext) -> None:
    if (sc.getConf().get("spark.speculation", "false") or "false").strip().lower() == "true":
        raise RunMembersError("run_members refuses spark.speculation=true: a speculative copy of a member task would "
                              "join as a second member with the same instance id")


def _open_root(location: str | Path | StateRoot, storage: Mapping[str, Any] | None = None) -> StateRoot:
    if isinstance(location, StateRoot):
        return location
    try:
        return StateRoot.open(location, create=True, storage=storage)
    except StateRootError as exc:
        raise RunMembersError(f"run_members: {exc}") from None


def _ensure_coordinator(spark: SparkSession, config: Config, root: StateRoot,
                        offered: Sequence[str]) -> tuple[BackgroundCoordinator, str, bool]:
    """Start a coordinator in this driver, serving, or standing by behind the live lease holder (and taking over
    when that one dies: a restarted driver finds its dead predecessor's lease still live for up to
    ``lease.timeout.ms`` + ``lease.safety.ms``); returns (ours, the serving address, whether ours serves).
    ``offered``: the members' assignors, which decide what the planner warm-up warms."""
    from groupcoord.assignment.runner import spark_assignment_runner
    from groupcoord.host.background import BackgroundCoordinator
    from groupcoord.log.lease import current_holder

    runner = spark_assignment_runner(root, spark=spark, warm_up=config["assignor.warmup"], offered=offered)
    coordinator = BackgroundCoordinator(root, coordinator_config(spark, config), assignment_runner=runner,
                                        target_assignment_runner=runner.targets)
    address = coordinator.start_or_stand_by(COORDINATOR_START_TIMEOUT_S)
    if address is not None:
        log.info("coordinator of %s started in the driver at %s", root.location, address)
        return coordinator, address, True
    holder = current_holder(root)
    assert holder is not None  # standing by: somebody holds the lease
    log.info("using the coordinator of %s held by %s at %s; standing by to take it over", root.location, holder.holder,
             holder.address)
    return coordinator, holder.address, False


def coordinator_config(spark: SparkSession, config: Config, *, listen_given: bool | None = None) -> Config:
    """``config`` with the driver's coordinator endpoint (:func:`~groupcoord.spark.driver_address.coordinator_endpoint`:
    bound and advertised where the executors reach it), unless ``spark.groupcoord.listen`` was given
    (``listen_given``; by default: whether the Spark conf sets it)."""
    if listen_given is None:
        listen_given = spark.sparkContext.getConf().contains(full_name("listen"))
    if listen_given:
        return config
    endpoint = coordinator_endpoint(spark)
    if endpoint.advertised is None:
        return config.with_values(listen=endpoint.listen)
    return config.with_values(listen=endpoint.listen, advertised_listener=endpoint.advertised)


def _run_member_job(sc: SparkContext, spec: _TaskSpec, num_members: int, work: Work) -> list[MemberResult]:
    tag = f"groupcoord-members-{uuid.uuid4().hex[:12]}"
    sc.addJobTag(tag)
    sc.setJobDescription(f"groupcoord: {num_members} members of group {spec.group_id}")
    try:
        rdd = sc.parallelize(range(num_members), num_members)
        results: list[MemberResult] = rdd.mapPartitionsWithIndex(partial(_member_task, spec, work)).collect()
        return results
    except KeyboardInterrupt:
        log.warning("interrupted: cancelling the member tasks of group %s", spec.group_id)
        sc.cancelJobsWithTag(tag)
        raise
    finally:
        sc.removeJobTag(tag)
        sc.setJobDescription(None)  # type: ignore[arg-type]


# --- executor side ------------------------------------------------------------------------------------------------

def _build_member(spec: _TaskSpec, index: int) -> GroupMember:
    try:
        kwargs = dict(spec.member_kwargs)
        if spec.storage and kwargs.get("state_root") is not None:  # an S3 root, opened with this process's secrets
            kwargs["state_root"] = StateRoot.open(kwargs["state_root"], storage=spec.storage)
        return GroupMember(spec.group_id, topics=spec.topics, group_instance_id=f"{spec.prefix}-{index}", **kwargs)
    except (TypeError, ValueError) as exc:
        raise RunMembersError(f"run_members: bad member options: {exc}") from None


def _member_task(spec: _TaskSpec, work: Work, index: int, rows: Iterator[int]) -> Iterator[MemberResult]:
    """The body of member task ``index``: poll, work, repeat until ``work`` says stop; then leave."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    member = _build_member(spec, index)
    if attempt:
        log.warning("group %s: task %d retried (attempt %d): rejoining as %s", spec.group_id, index, attempt,
                    member.config.group_instance_id)
    iterations = 0
    assignment: frozenset[TopicPartition] = frozenset()
    try:
        while True:
            assignment = member.poll(spec.poll_timeout_ms)
            iterations += 1
            if not work(member, assignment):
                break
        generation = member.generation
    finally:
        member.close()
    yield MemberResult(
        index=index, group_instance_id=f"{spec.prefix}-{index}", member_id=generation.member_id,
        generation_id=generation.generation_id, attempt=attempt, iterations=iterations,
        assignment=tuple(sorted((tp.topic, tp.partition) for tp in assignment)),
    )
