"""run_members in local Spark: executor tasks as static members that split a topic, slot and speculation rules,
and a member whose Python worker is killed: the group rebalances and the retried task rejoins as the same instance.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from groupcoord.config import Config, resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.log.lease import current_holder
from groupcoord.spark.members import RunMembersError, run_members
from groupcoord.state.schema import ASSIGNMENTS
from groupcoord.state.views import read_rows
from groupcoord.state_root import StateRoot
from tests.narrowing import present
from tests.spark.members.conftest import FAST_CONF, PARTITIONS, TOPIC
from tests.spark.members.works import KillVictimOnce, SplitThenLeave, journal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

FAST_MEMBER: dict[str, Any] = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 300,
                               "rebalance_timeout_ms": 60000, "poll_timeout_ms": 500}


@contextlib.contextmanager
def spark_conf(spark: SparkSession, **values: str) -> Iterator[None]:
    """Set Spark conf keys (``spark_speculation="true"``) on the running context for the block, then unset them."""
    conf = spark.sparkContext._conf
    keys = {name.replace("_", "."): value for name, value in values.items()}
    for key, value in keys.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key in keys:
            present(conf._jconf).remove(key)


def _config(spark: SparkSession, **extra: str) -> Config:
    spark_pairs = dict(spark.sparkContext.getConf().getAll())
    return resolve_config(spark_conf={**spark_pairs, **FAST_CONF, **extra})


def test_too_few_task_slots_fail_at_once_naming_both_numbers(spark: SparkSession, root: StateRoot,
                                                             tmp_path: Path) -> None:
    work = SplitThenLeave(str(tmp_path), members=4, share=1, partitions=PARTITIONS)
    with pytest.raises(RunMembersError, match=r"needs 5 task slots \(4 members \+ 1 reserved .*\) but .* has 4"):
        run_members(spark, "g", [TOPIC], 4, work, state_root=str(root.path))
    with spark_conf(spark, spark_groupcoord_assignor_reserved_slots="2"), \
            pytest.raises(RunMembersError, match=r"needs 5 task slots \(3 members \+ 2 reserved"):
        run_members(spark, "g", [TOPIC], 3, work, state_root=str(root.path))
    assert current_holder(root) is None, "nothing may start before the checks pass"


def test_speculation_is_refused(spark: SparkSession, root: StateRoot, tmp_path: Path) -> None:
    work = SplitThenLeave(str(tmp_path), members=2, share=3, partitions=PARTITIONS)
    with spark_conf(spark, spark_speculation="true"), pytest.raises(RunMembersError, match=r"spark\.speculation"):
        run_members(spark, "g", [TOPIC], 2, work, state_root=str(root.path))
    assert current_holder(root) is None


def test_without_state_root_or_bootstrap_servers_it_says_what_is_missing(spark: SparkSession, tmp_path: Path) -> None:
    work = SplitThenLeave(str(tmp_path), members=1, share=6, partitions=PARTITIONS)
    with pytest.raises(RunMembersError, match=r"needs a state root \(spark.groupcoord.state.root"):
        run_members(spark, "g", [TOPIC], 1, work)


def test_bad_member_options_fail_on_the_driver(spark: SparkSession, root: StateRoot, tmp_path: Path) -> None:
    work = SplitThenLeave(str(tmp_path), members=1, share=6, partitions=PARTITIONS)
    with pytest.raises(RunMembersError, match=r"bad member options.*no_such_option"):
        run_members(spark, "g", [TOPIC], 1, work, state_root=str(root.path), no_such_option=1)  # type: ignore[call-arg]


@pytest.mark.slow
def test_two_members_split_the_partitions_with_server_side_assignment_and_finish(
        spark: SparkSession, root: StateRoot, tmp_path: Path) -> None:
    """Default protocol (server-cooperative-sticky): the driver's SparkSession assigns in the reserved slot while
    both member tasks hold theirs. Both join within the initial delay, so one Spark assignment settles the group;
    the rebalance timeout leaves room for a cold assignor on a loaded machine."""
    work = SplitThenLeave(str(tmp_path), members=2, share=3, partitions=PARTITIONS)
    config = _config(spark, **{"spark.groupcoord.group.initial.rebalance.delay.ms": "3000"})
    result = run_members(spark, "split", [TOPIC], 2, work, config=config, state_root=str(root.path),
                         **{**FAST_MEMBER, "rebalance_timeout_ms": 180000})
    prefix = spark.sparkContext.appName
    assert result.started_coordinator and result.coordinator is not None
    assert [m.group_instance_id for m in result.members] == [f"{prefix}-0", f"{prefix}-1"]
    assert [len(m.assignment) for m in result.members] == [3, 3]
    assert {p for m in result.members for _, p in m.assignment} == set(range(PARTITIONS))
    assert all(m.iterations >= 1 and m.attempt == 0 for m in result.members)
    released = current_holder(root)
    assert released is not None and not released.live, "the driver's coordinator released the lease"


def test_killed_member_worker_rebalances_and_the_retry_rejoins_under_its_instance_id(
        spark: SparkSession, root: StateRoot, tmp_path: Path) -> None:
    """Member 1's Python worker dies (SIGKILL) once it owns partitions. Spark retries the task; it rejoins as
    ``kill-1`` with a new member id (a rebalance, or KIP-345's in-place replacement), and the final generation
    covers every partition."""
    victim = "kill-1"
    work = KillVictimOnce(str(tmp_path), victim=victim, members=2, share=3, partitions=PARTITIONS)
    config = _config(spark, **{"spark.groupcoord.instance.prefix": "kill"})
    result = run_members(spark, "killed", [TOPIC], 2, work, config=config, state_root=str(root.path),
                         assignors=("cooperative-sticky",), **FAST_MEMBER)

    assert (tmp_path / "killed").exists()
    survivor, retried = result.members
    assert (survivor.group_instance_id, survivor.attempt) == ("kill-0", 0)
    assert retried.group_instance_id == victim and retried.attempt >= 1
    assert {p for m in result.members for _, p in m.assignment} == set(range(PARTITIONS))
    assert [len(m.assignment) for m in result.members] == [3, 3]

    seen = journal(tmp_path)
    killed_pid = int((tmp_path / "killed").read_text())
    first_generation = min(int(str(line["generation"])) for line in seen if line["pid"] == killed_pid)
    assert {line["pid"] for line in seen if line["instance"] == victim} - {killed_pid}, "the retry ran elsewhere"
    # Two right outcomes, depending on how fast Spark retries the task: after the coordinator expired the killed
    # member (a rebalance: a later generation), or within its session timeout, when KIP-345 replaces the static
    # member in place (same generation, no rebalance). Either way the retry holds a new member id (checked below).
    assert survivor.generation_id >= first_generation

    history = read_rows(root, ASSIGNMENTS).to_pylist()
    holders: dict[tuple[int, int], set[str]] = {}
    for r in history:
        if r["group_id"] == "killed" and r["member_id"] and r["partition"] is not None:
            holders.setdefault((r["generation"], r["partition"]), set()).add(r["group_instance_id"])
    shared = {key: names for key, names in holders.items() if len(names) > 1}
    assert not shared, f"(generation, partition) held by two instances: {shared}"
    victim_member_ids = {r["member_id"] for r in history if r["group_instance_id"] == victim and r["member_id"]}
    assert len(victim_member_ids) >= 2, "the retry rejoined under the same instance id with a new member id"
    final = max(r["generation"] for r in history if r["group_id"] == "killed" and r["member_id"])
    owners = {r["partition"]: r["group_instance_id"] for r in history
              if r["group_id"] == "killed" and r["generation"] == final and r["member_id"]}
    assert set(owners) == set(range(PARTITIONS)), f"every partition owned in generation {final}"
    assert set(owners.values()) == {"kill-0", victim}


def test_a_live_lease_holder_is_used_while_the_driver_stands_by(
        spark: SparkSession, root: StateRoot, tmp_path: Path, fast_config: Config) -> None:
    """Another coordinator holds the lease: the driver's stands by (it would take over, as a restarted driver takes
    over from its dead predecessor), and the members find that one (leader-side range assignment here, so no Spark
    assignor is involved)."""
    work = SplitThenLeave(str(tmp_path), members=2, share=3, partitions=PARTITIONS)
    with BackgroundCoordinator(root, fast_config, holder_id="elsewhere") as holder:
        result = run_members(spark, "holder", [TOPIC], 2, work, config=_config(spark), state_root=str(root.path),
                             assignors=("range",), **FAST_MEMBER)
        assert not result.started_coordinator and result.coordinator == holder.address
        lease = current_holder(root)
        assert lease is not None and lease.live and lease.holder == "elsewhere"
    assert sorted(p for m in result.members for _, p in m.assignment) == list(range(PARTITIONS))
