"""The README's standalone recipe is what the cluster tests run: its ``groupcoord cluster supervise`` command has the
settings and the job flags of the drills' command (``bench.cluster_faults.supervised_command``), with values of the
same kind (an ``s3://`` state root, an ``s3a://`` sink, the endpoint from the environment), and nothing of its own;
the drills add only what the README says they add."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from bench.cluster_faults import PipelineSpec, supervised_command
from tests.cluster.conftest import Locations

REPO = Path(__file__).resolve().parents[2]
TEST_ONLY_SETTINGS = {"spark.ui.port", "spark.executorEnv.PYTHONPATH"}
TEST_ONLY_FLAGS = {"--engine", "--max-records-per-batch", "--available-now", "--no-progress-tty"}
"""What the README says the tests add (the driver's UI port, the checkout under test, the pacing)."""


def readme_command(pair: bool = False) -> list[str]:
    """The README's supervised spark-submit line (its ``bash`` block that runs ``groupcoord cluster supervise``, or
    with ``pair`` the one that runs it with ``--replicas``)."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    block = next(b for b in blocks if "cluster supervise" in b and ("--replicas" in b) == pair)
    lines = [line for line in block.replace("\\\n", " ").splitlines() if "cluster supervise" in line]
    assert len(lines) == 1, block
    return shlex.split(lines[0])


def settings(command: list[str]) -> dict[str, str]:
    """The ``--conf KEY=VALUE`` settings of a command line."""
    return dict(command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "--conf")


def job_flags(command: list[str]) -> set[str]:
    """The flags given to ``jobs/streaming_ingest.py``."""
    job = next(i for i, arg in enumerate(command) if arg.endswith("jobs/streaming_ingest.py"))
    return {arg for arg in command[job + 1:] if arg.startswith("--")}


@pytest.mark.parametrize("drivers", [1, 2])
def test_the_readme_recipe_is_the_command_the_cluster_drills_run(tmp_path: Path, drivers: int) -> None:
    where = Locations("s3://bucket/state", "s3a://bucket/sink", (("spark.groupcoord.storage.endpoint", "http://x"),))
    spec = PipelineSpec(state_root=where.state_root, sink=where.sink, conf=where.conf, drivers=drivers)
    drill = supervised_command("spark://127.0.0.1:7077", spec, tmp_path / "driver.pid", 4040)
    readme = readme_command(pair=drivers > 1)
    replicas = ["--replicas", str(drivers)] if drivers > 1 else []
    assert readme[:4 + len(replicas)] == [".venv/bin/groupcoord", "cluster", "supervise", *replicas, "--pid-file"]
    assert drill[1:5 + len(replicas)] == ["-m", "groupcoord", "cluster", "supervise", *replicas]
    assert readme[readme.index("--") + 1] == "bin/spark-submit" and drill[drill.index("--") + 1].endswith(
        "bin/spark-submit")
    readme_settings, drill_settings = settings(readme), settings(drill)
    # The drills name their checkout to the executors only when PYTHONPATH names one (a worktree; not make test).
    assert set(drill_settings) - set(readme_settings) <= TEST_ONLY_SETTINGS
    assert "spark.ui.port" in drill_settings
    assert set(readme_settings) <= set(drill_settings)
    assert readme_settings["spark.groupcoord.state.root"].startswith("s3://")
    assert readme_settings["spark.groupcoord.storage.endpoint"] == "$AWS_ENDPOINT_URL"
    for key in ("spark.executor.memory", "spark.groupcoord.streaming.session.timeout.ms", "spark.cores.max"):
        assert readme_settings.get(key) == drill_settings.get(key)
    assert job_flags(drill) - job_flags(readme) == TEST_ONLY_FLAGS
    assert job_flags(readme) <= job_flags(drill)
    assert readme[readme.index("--sink") + 1].startswith("s3a://")
