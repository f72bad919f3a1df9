"""The ingestion job as one driver of a pair (``groupcoord cluster supervise --replicas 2``): its index from the
supervisor's environment variable, a checkpoint prefix of its own, and the refusals that keep two applications from
sharing partitions unsafely (the structured engine only; ``spark.cores.max`` on a standalone master). No Spark: the
pair's drill on a cluster is ``tests/cluster/test_faults.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.cluster import DRIVER_INSTANCE_ENV
from groupcoord.config import ConfigError
from groupcoord.ingest.config import IngestConfig
from groupcoord.ingest.pair import check_pair, driver_instance
from groupcoord.ingest.structured import query_checkpoint, query_name

STANDALONE = {"spark.master": "spark://10.0.0.1:7077"}


def config(sink: Path) -> IngestConfig:
    return IngestConfig(group_id="orders", topics=("orders",), pattern=None, source="embedded", sink=str(sink),
                        members=2)


@pytest.mark.parametrize(("value", "instance"), [(None, None), ("", None), ("0", 0), (" 1 ", 1)])
def test_the_instance_comes_from_the_supervisors_variable(value: str | None, instance: int | None) -> None:
    assert driver_instance({} if value is None else {DRIVER_INSTANCE_ENV: value}) == instance


@pytest.mark.parametrize("value", ["-1", "one", "1.5"])
def test_a_bad_instance_is_a_configuration_error(value: str) -> None:
    with pytest.raises(ConfigError, match=f"{DRIVER_INSTANCE_ENV} must be a driver instance number"):
        driver_instance({DRIVER_INSTANCE_ENV: value})


def test_each_instance_checkpoints_under_its_own_prefix(tmp_path: Path) -> None:
    """Two queries running at once must never share a checkpoint: the pair's instances differ, a lone driver keeps
    the layout it always had."""
    ingest = config(tmp_path / "sink")
    lone, first, second = (query_checkpoint(ingest, 0, None, instance=i).uri for i in (None, 0, 1))
    assert lone.endswith("/sink/_checkpoints/query-0")
    assert first.endswith("/sink/_checkpoints/driver-0/query-0")
    assert second.endswith("/sink/_checkpoints/driver-1/query-0")
    given = query_checkpoint(ingest, 1, str(tmp_path / "ckpt"), instance=1).uri
    assert given.endswith("/ckpt/driver-1/query-1")
    assert [query_name(ingest, 1, i) for i in (None, 1)] == ["orders-1", "orders-driver1-1"]


def test_a_pair_runs_the_structured_engine_only() -> None:
    with pytest.raises(ConfigError, match="runs the structured engine only"):
        check_pair(0, "members", {**STANDALONE, "spark.cores.max": "1"})


def test_a_pair_on_a_standalone_master_needs_cores_max() -> None:
    with pytest.raises(ConfigError, match=r"needs spark\.cores\.max"):
        check_pair(1, "structured", STANDALONE)
    check_pair(1, "structured", {**STANDALONE, "spark.cores.max": "2"})
    check_pair(1, "structured", {**STANDALONE, "spark.dynamicAllocation.enabled": "true"})
    check_pair(0, "structured", {"spark.master": "yarn"})
    check_pair(None, "members", STANDALONE)  # a lone driver: nothing to share
