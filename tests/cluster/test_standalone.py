"""The ingestion pipeline on a real Spark standalone cluster (issue 28), in ``make test``: a master and two workers on
127.0.0.1, each its own JVM, and ``jobs/streaming_ingest.py`` (the default engine: Structured Streaming queries)
submitted to it in client mode under ``groupcoord cluster supervise``, the README's recipe. An executor JVM running a
task is killed part way: Spark retries its tasks, the master starts a new executor, and the sink still holds every
record once, with the group's committed offsets at the log ends. The rest of the fault matrix (driver, worker, the
members engine) is ``tests/cluster/test_faults.py``, run by ``make test-cluster``.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from bench.cluster_faults import PipelineSpec, run_fault
from groupcoord.cluster import StandaloneCluster
from groupcoord.cluster.processes import command_line
from groupcoord.cluster.standalone import WORKER_CLASS
from groupcoord.log.lease import current_holder
from groupcoord.state_root import StateRoot
from tests.cluster.conftest import CLUSTER, Locations

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_the_master_registers_two_workers_each_its_own_jvm(standalone_cluster: StandaloneCluster) -> None:
    workers = standalone_cluster.alive_workers()
    assert len(workers) == CLUSTER.workers
    assert all(w["cores"] == CLUSTER.cores and w["host"] == "127.0.0.1" for w in workers)
    pids = [standalone_cluster.worker_pid(i) for i in range(CLUSTER.workers)]
    assert None not in pids and len(set(pids)) == CLUSTER.workers
    assert all(WORKER_CLASS in command_line(pid) for pid in pids if pid is not None)
    assert standalone_cluster.master_url.startswith("spark://127.0.0.1:")


def test_the_structured_pipeline_keeps_every_record_once_through_an_executor_kill(
        standalone_cluster: StandaloneCluster, shared_locations: Locations, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec = PipelineSpec(engine="structured", state_root=shared_locations.state_root, sink=shared_locations.sink,
                        conf=shared_locations.conf, records=1200, batch=100)
    result = run_fault(standalone_cluster, spec, "executor", tmp_path / "run")
    with capsys.disabled():
        print(f"\n[cluster] {result.row()}")
    assert result.exit_code == 0
    assert result.check.ok, result.check.summary()
    assert result.driver_runs == 1
    assert result.flowing_again_s is not None
    # The coordinator advertised a numeric address the executors reached (not "localhost"), and warmed no plan:
    # the default assignor assigns on the driver, so no warm-up job took the executors' two slots.
    holder = current_holder(StateRoot.open(spec.state_root))
    assert holder is not None
    ipaddress.ip_address(holder.address.rpartition(":")[0].strip("[]"))
    output = (tmp_path / "run" / "supervise.log").read_text()
    assert "no planner warm-up" in output
    assert "warmed the planner" not in output
