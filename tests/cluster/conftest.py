"""Fixtures of the cluster tests: a Spark standalone cluster on loopback (a master and two workers of one core, each
its own JVM, ``groupcoord.cluster.StandaloneCluster``), once per module, and where a pipeline keeps its state root and
sink.

The tests start their own applications on it through ``bin/spark-submit`` under ``groupcoord cluster supervise``
(``bench/cluster_faults.py``), never the test session's SparkSession. The daemons get this process's environment, so
a ``PYTHONPATH`` naming a checkout reaches the executors' Python workers too; they die with the test session.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from groupcoord.cluster import ClusterSpec, StandaloneCluster

CLUSTER = ClusterSpec(workers=2, cores=1, memory="1g")


@dataclass(frozen=True)
class Locations:
    """Where a pipeline's state root and sink live: storage the driver and every executor share, and the spark-submit
    settings that reach it (an S3 server's endpoint; its secrets come from the environment of the cluster's daemons
    and the driver, never from a setting)."""

    state_root: str
    sink: str
    conf: tuple[tuple[str, str], ...] = ()


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two workers (1 core, 1 GB for executors each) on 127.0.0.1, for the tests of one module."""
    with StandaloneCluster.start(tmp_path_factory.mktemp("cluster"), CLUSTER) as cluster:
        yield cluster


@pytest.fixture
def shared_locations(tmp_path: Path) -> Locations:
    """The state root and the sink on a local path every process of this machine shares. The S3 server's bucket
    takes their place once the Spark side runs on S3 (branch s3-spark): only this fixture changes."""
    return Locations(state_root=str(tmp_path / "state"), sink=str(tmp_path / "sink"))
