"""The fault matrix of the ingestion pipeline on a Spark standalone cluster (issue 28), run by ``make test-cluster``
(marker ``cluster``; CI runs it after ``make test-faults``): for each engine, kill -9 of the driver (the supervisor
starts it again), of a worker (started again 5 s later), of an executor for the members engine (the structured engine's
executor kill is in ``make test``, ``test_standalone.py``), of the lease holder of a structured driver pair
(``supervise --replicas 2``: the other driver's queries take its partitions over), and the S3 server under the state
root, the sink and Spark's checkpoints restarted mid-run (down 5 s, then back on the same port and data: every
client's requests fail, are retried with backoff, and succeed). Each run must end with every record in the sink
exactly once, the committed offsets at the log ends and none ever gone back, and records must flow again after the
fault. The times go to the test's output, and
with ``GROUPCOORD_CLUSTER_FAULT_ROWS=FILE`` to ``FILE``, which ``python -m bench.cluster_faults --from-rows FILE``
records in ``docs/benchmarks.md`` (with issue 28's 60 s target for a driver kill as a speed check).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cluster_faults import PipelineSpec, run_fault
from bench.s3_server import RestartableVersitygw
from groupcoord.cluster import StandaloneCluster
from tests.cluster.conftest import Locations

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.integration]

MEMBERS_BATCH = 10
"""The members engine's records per partition per sink commit: its members read a 100-record batch so much faster
than a query that 100 let a run end before the kill (4,000 records in about 2 s)."""


@pytest.mark.parametrize(("engine", "fault"), [
    ("members", "executor"), ("members", "driver"), ("members", "worker"),
    ("structured", "worker"), ("structured", "driver"),
    ("structured", "storage"), ("members", "storage"),
])
def test_every_record_once_and_no_commit_lost_through_a_kill(
        standalone_cluster: StandaloneCluster, shared_locations: Locations, cluster_s3: RestartableVersitygw,
        tmp_path: Path, engine: str, fault: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = PipelineSpec(engine=engine, state_root=shared_locations.state_root, sink=shared_locations.sink,
                        conf=shared_locations.conf, records=4000, batch=MEMBERS_BATCH if engine == "members" else 100)
    result = run_fault(standalone_cluster, spec, fault, tmp_path / "run", storage=cluster_s3)
    with capsys.disabled():
        print(f"\n[cluster] {result.row()}")
    assert result.exit_code == 0
    assert result.check.ok, result.check.summary()
    assert result.flowing_again_s is not None
    if fault == "driver":
        assert result.driver_runs == 2
        # Issue 28's 60 s (FLOW_TARGET_S) is a speed target, checked in bench/results/cluster_faults.json, not here:
        # a restarted driver's cold start (spark-submit's JVM, the SparkContext, its executors' first Python
        # workers) took 2-3 minutes on this shared machine under load, and a test must not fail on the load.
    if fault == "storage":
        assert result.driver_runs == 1  # every request the outage failed was retried: no query or driver died
    standalone_cluster.wait_for_workers(2)


PAIR_RECORDS = 6000
"""The pair's drill kills once both drivers' queries are in the group, which can come after 30% of 4,000 records on a
loaded machine (the second driver's SparkContext and executor start later): 6,000 leave records to move after it."""


def test_a_driver_pair_keeps_every_record_once_through_the_lease_holders_kill(
        standalone_cluster: StandaloneCluster, shared_locations: Locations, cluster_s3: RestartableVersitygw,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28 with the structured engine: two supervised drivers in one group (``spark.cores.max=1`` each, so both
    have an executor), the lease holder killed once both drivers' queries are members: the other takes the lease
    and the dead queries' partitions, the killed one is started again and rejoins."""
    spec = PipelineSpec(engine="structured", state_root=shared_locations.state_root, sink=shared_locations.sink,
                        conf=shared_locations.conf, records=PAIR_RECORDS, batch=100, drivers=2)
    result = run_fault(standalone_cluster, spec, "driver", tmp_path / "run", storage=cluster_s3)
    with capsys.disabled():
        print(f"\n[cluster] {result.row()}")
    assert result.exit_code == 0
    assert result.check.ok, result.check.summary()
    assert result.kill_after_rows < PAIR_RECORDS * 0.8, "the kill came too late to measure a recovery"
    assert result.all_flowing_again_s is not None
    # Both drivers, and the killed one once more; at a load average of 20-30 a driver's first start can fail too
    # (Spark 4.2 gives a query's Python source worker a fixed 10 s to connect back) and is started again.
    assert result.driver_runs >= 3
    assert result.killed.startswith("the lease holder")
    standalone_cluster.wait_for_workers(2)
