"""Fixtures of the cluster tests: a Spark standalone cluster on loopback (a master and two workers of one core, each
its own JVM, ``groupcoord.cluster.StandaloneCluster``), once per module, and the S3 server (versitygw, once per
session) that holds every pipeline's state root, sink and Spark checkpoints.

The tests start their own applications on it through ``bin/spark-submit`` under ``groupcoord cluster supervise``
(``bench/cluster_faults.py``), never the test session's SparkSession. The daemons get this process's environment and
the S3 server's ``AWS_*`` variables (its credentials among them: the README's recipe, the executors' secrets from the
environment the workers start in), so a ``PYTHONPATH`` naming a checkout reaches the executors' Python workers too;
they die with the test session. The driver gets the same variables from the test's environment
(:func:`shared_locations`), and the endpoint as a ``spark.groupcoord.storage.endpoint`` setting; never a secret as a
setting.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from bench.cluster_faults import s3_locations
from bench.s3_server import RestartableVersitygw, S3ServerError
from groupcoord.cluster import ClusterSpec, StandaloneCluster

CLUSTER = ClusterSpec(workers=2, cores=1, memory="1g")
_buckets = itertools.count()


@dataclass(frozen=True)
class Locations:
    """Where a pipeline's state root and sink live: storage the driver and every executor share, and the spark-submit
    settings that reach it (an S3 server's endpoint; its secrets come from the environment of the cluster's daemons
    and the driver, never from a setting)."""

    state_root: str
    sink: str
    conf: tuple[tuple[str, str], ...] = ()


@pytest.fixture(scope="session")
def cluster_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableVersitygw]:
    """versitygw on 127.0.0.1 with its posix backend in a temporary directory, for the whole session; the storage
    fault restarts it (:meth:`~bench.s3_server.RestartableVersitygw.restart`)."""
    from bench.cluster_faults import STORAGE_DOWN_S

    try:
        with RestartableVersitygw(tmp_path_factory.mktemp("versitygw") / "s3", down_s=STORAGE_DOWN_S) as server:
            yield server
    except S3ServerError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory,
                       cluster_s3: RestartableVersitygw) -> Iterator[StandaloneCluster]:
    """A master and two workers (1 core, 1 GB for executors each) on 127.0.0.1, for the tests of one module, started
    with the S3 server's ``AWS_*`` variables in their environment (which their executors inherit)."""
    with StandaloneCluster.start(tmp_path_factory.mktemp("cluster"), CLUSTER, env=cluster_s3.server.env) as cluster:
        yield cluster


@pytest.fixture
def shared_locations(cluster_s3: RestartableVersitygw, monkeypatch: pytest.MonkeyPatch,
                     request: pytest.FixtureRequest) -> Locations:
    """The state root (``s3://``) and the sink (``s3a://``, Spark's name: both are taken) in a new bucket of the S3
    server, named after the test; the server's ``AWS_*`` variables in this process's environment for the test, which
    the supervised driver inherits and the drill's watcher reads with."""
    for name, value in cluster_s3.server.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_S3_ALLOW_UNSAFE_RENAME", raising=False)
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    bucket = cluster_s3.server.create_bucket(f"{stem}-{next(_buckets)}")
    state_root, sink, conf = s3_locations(cluster_s3.server, bucket)
    return Locations(state_root=state_root, sink=sink, conf=conf)

