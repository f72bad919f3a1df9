"""A plain script that registers the source and ends without ``stop_coordinator`` (issue 27): it exits cleanly and its
coordinator releases the lease at exit, so a standby can take over at once instead of waiting for it to expire."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from groupcoord.log.lease import LeaseTable
from groupcoord.state_root import StateRoot

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.integration]

SCRIPT = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    import groupcoord.spark

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.groupcoord.assignor.warmup", "false").getOrCreate())
    coordinator = groupcoord.spark.register(spark, state_root=sys.argv[1])
    print("SERVING", coordinator.address, flush=True)
""")


def test_a_script_that_never_stops_its_coordinator_exits_cleanly_and_releases_the_lease(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "state", create=True)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(root.path)], capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SERVING" in done.stdout and "SERVING None" not in done.stdout, done.stdout
    assert "Traceback" not in done.stderr and "cannot schedule new futures" not in done.stderr, done.stderr[-3000:]
    lease = LeaseTable(root.lease_path).read_current()
    assert lease is not None and lease.released, lease
