"""Shared fixtures: one session-scoped SparkSession and one real Kafka broker for the whole test run (for each worker
when pytest-xdist runs the tests in parallel, as ``make test`` does), and how ``make test`` shares the tests out.

Hypothesis runs *derandomized* by default: every run of ``make test`` (CI's too) draws the same examples, so a
property test fails the same way each time or not at all. ``GROUPCOORD_HYPOTHESIS=explore make test`` draws fresh
random examples (and remembers failures in ``.hypothesis/``); put what it finds into a named test.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("GROUPCOORD_HYPOTHESIS", "deterministic"))

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.devbroker import KafkaBroker

WHOLE_PACKAGES = ("tests/clients/", "tests/parity/")
"""Packages whose package-scoped fixtures start a process (a ``serve``, a Kafka broker of the parity settings): all
their modules run on one worker, so that the process starts once. Every other module is a unit of its own."""


def work_unit(nodeid: str) -> str:
    """What runs on one worker, in one go: the test's module, or its package in :data:`WHOLE_PACKAGES`. The tests
    of a unit share its module- and package-scoped fixtures, which start only once."""
    path = nodeid.split("::", 1)[0]
    return next((package for package in WHOLE_PACKAGES if path.startswith(package)), path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadscope`` (``make test``), by :func:`work_unit` instead of by module or class, the units handed out
    in the order of the workers' collection (see :func:`pytest_collection_modifyitems`)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class WorkUnitScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # xdist would order the units by their number of tests
    return WorkUnitScheduling(config, log)


COSTS = (("slow", 30.0), ("spark", 3.0), ("kafka", 3.0), ("integration", 3.0), ("jvm", 3.0), ("node", 3.0))
"""A rough cost of a test by its first mark found here, for handing the costly work units out first (a test with none
of these marks costs 0.1)."""


def _cost(item: pytest.Item) -> float:
    return next((cost for name, cost in COSTS if item.get_closest_marker(name) is not None), 0.1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: the costliest work units first, so that the last ones handed out are short and both workers
    finish together. The order inside a unit is kept; a run without workers keeps the order of the files."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    costs: dict[str, float] = defaultdict(float)
    for item in items:
        costs[work_unit(item.nodeid)] += _cost(item)
    items.sort(key=lambda item: -costs[work_unit(item.nodeid)])  # stable: a unit's tests stay together, in order


INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
"""The test session runs its queries interpreted, with no generated code: the tests run thousands of distinct small
queries, and each one's generated classes kept the JVM's JIT compilers busy for most of a core (the work itself took
about half of one). ``tests/assignors/test_batch.py`` took 126 s with code generation and 99 s without. The results
are the same either way (Spark's own tests run both paths); the jobs and the coordinator keep Spark's defaults."""


S3_SPARK_TESTS = "tests/s3/"
"""Where the Spark tests on S3 are: a session that will run one of them starts with the ``s3`` jars and the S3
server's credentials in its JVM's environment (:func:`_s3_session_setup`)."""


def _s3_session_setup(session: pytest.Session) -> tuple[dict[str, str], dict[str, str]]:
    """The Spark settings and JVM environment the S3 Spark tests need, when this run holds any: the ``s3`` jars
    (fetched on first use, about 690 MB) on the driver's classpath, and the test server's credentials (its fixed
    test keys) in the environment the JVM starts with, as a user's would (never in a conf). Their per-bucket S3A
    settings are set at run time (:func:`groupcoord.spark.s3a.use_s3a`), so one session serves every bucket."""
    if not any(item.nodeid.startswith(S3_SPARK_TESTS) and item.get_closest_marker("spark") is not None
               for item in session.items):
        return {}, {}
    from bench.s3_server import ACCESS_KEY, REGION, SECRET_KEY
    from groupcoord.config.jars import s3_classpath

    jars = {"spark.driver.extraClassPath": s3_classpath()}  # local[...]: the executors are this JVM
    return jars, {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    """``local[4,4]`` (4 slots, task retries), UI off, 2 shuffle partitions, UTC, interpreted (:data:`INTERPRETED`).
    Built once per test session (with the ``s3`` jars when the run holds Spark tests on S3)."""
    from groupcoord.spark.session import local_session

    extra, environment = _s3_session_setup(request.session)
    saved = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)  # the JVM inherits them; this process gets its own back below
    try:
        session = local_session(master="local[4,4]", app_name="groupcoord-tests",
                                extra={"spark.default.parallelism": "4", **INTERPRETED, **extra})
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A real Apache Kafka broker (KRaft, single node) on 127.0.0.1, started once per test session.

    Tests that use it carry the ``kafka`` marker. They share it, so each creates topics (and groups) of its own names;
    ``kafka_broker.bootstrap`` is the ``HOST:PORT`` to connect to. Its log is under the session's temporary directory.
    Its JVM runs without the C2 compiler (``TEST_JVM_OPTIONS``): it starts faster and leaves the cores to the tests.
    """
    from groupcoord.devbroker import TEST_JVM_OPTIONS, KafkaBroker

    with KafkaBroker.start(tmp_path_factory.mktemp("kafka-broker"), jvm_options=TEST_JVM_OPTIONS) as broker:
        yield broker


@pytest.fixture(autouse=True)
def _groupcoord_logger_restored() -> Iterator[None]:
    """Put the ``groupcoord`` logger back as it was after each test. An entry point run in-process (the CLI's main,
    a job's main) calls ``log_to_stderr``, which binds a handler to the stderr of that moment (pytest's capture of
    that test, closed after it) and stops propagation: later tests' records then missed pytest's capture, and every
    record a background thread logged went to the closed stream ("--- Logging error ---" in CI's output)."""
    logger = logging.getLogger("groupcoord")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate
