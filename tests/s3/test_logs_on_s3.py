"""The record log and the lease on S3: the same contracts as on a local disk (the tests of ``tests/log`` run here
against the versitygw fixture), writers racing one version, and a commit whose response is lost.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator

import pytest

from bench.s3_proxy import ProxyProcess
from groupcoord.log.base import LogFencedError
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.lease import LeaseTable
from groupcoord.state_root import StateRoot
from groupcoord.storage import objects
from groupcoord.storage.commits import COMMIT_ID_KEY
from groupcoord.storage.location import parse_location
from groupcoord.topics import TopicCatalog, TopicLog
from groupcoord.topics.topic_log import ProducerRecord
from tests.log import test_lease, test_record_log_contract
from tests.log.storage_helpers import LogFactory, offset
from tests.s3.conftest import S3Server

pytestmark = pytest.mark.integration

# The local contracts, collected here again with this module's S3 fixtures: the record log's whole contract, and
# every lease test that takes only the lease fixture (the others start processes over a local root).
globals().update({name: test for name, test in vars(test_record_log_contract).items() if name.startswith("test_")})
globals().update({name: test for name, test in vars(test_lease).items()
                  if name.startswith("test_") and list(inspect.signature(test).parameters) == ["lease"]})


@pytest.fixture
def root(s3_env: dict[str, str], s3_bucket: str) -> StateRoot:
    """A new state root on the S3 server."""
    return StateRoot.open(f"s3://{s3_bucket}/root", create=True)


@pytest.fixture
def log_factory(root: StateRoot) -> LogFactory:
    """Handles on one record log on S3."""
    return lambda: DeltaRecordLog(root.log_path)


@pytest.fixture
def lease(root: StateRoot) -> LeaseTable:
    """The lease table of an S3 root, with the lease tests' timings."""
    return LeaseTable(root.lease_path, config=test_lease.CONFIG)


def test_two_writers_racing_one_version_leave_one_commit_and_fence_the_other(root: StateRoot) -> None:
    first = DeltaRecordLog(root.log_path).append([offset("g", 0, 0)], expected_version=-1)
    writers = [DeltaRecordLog(root.log_path) for _ in range(4)]
    start = threading.Barrier(len(writers))
    outcomes: dict[int, str] = {}

    def race(index: int) -> None:
        start.wait()
        try:
            writers[index].append([offset("g", 0, index + 1)], expected_version=first)
            outcomes[index] = "committed"
        except LogFencedError:
            outcomes[index] = "fenced"

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(writers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes.values()) == ["committed", "fenced", "fenced", "fenced"]
    (winner,) = (i for i, outcome in outcomes.items() if outcome == "committed")
    loaded = DeltaRecordLog(root.log_path).load()
    assert loaded.version == first + 1
    assert [r.value for r in loaded.records] == [b'{"offset": 0}', f'{{"offset": {winner + 1}}}'.encode()]


@pytest.fixture
def proxy(s3_server: S3Server) -> Iterator[ProxyProcess]:
    """A response-dropping proxy in front of the S3 server."""
    dropping = ProxyProcess(s3_server.port)
    yield dropping
    dropping.close()


def test_a_commit_whose_response_is_lost_is_recognised_and_written_once(
        s3_server: S3Server, s3_bucket: str, proxy: ProxyProcess) -> None:
    location = parse_location(f"s3://{s3_bucket}/log", environ={**s3_server.env, "AWS_ENDPOINT_URL": proxy.endpoint})
    log = DeltaRecordLog(location)
    version = log.append([offset("g", 0, 1)], expected_version=-1)
    proxy.drop_response_to_put_of(f"_delta_log/{version + 1:020d}.json")

    assert log.append([offset("g", 0, 2)], expected_version=version) == version + 1

    assert proxy.dropped() == 1, "the proxy lost no response: the test did not test anything"
    assert DeltaRecordLog(location).version() == version + 1
    commit = objects.read(location, f"_delta_log/{version + 1:020d}.json")
    assert commit is not None and COMMIT_ID_KEY.encode() in commit
    assert [r.value for r in DeltaRecordLog(location).load().records] == [b'{"offset": 1}', b'{"offset": 2}']


def test_a_topic_log_on_s3_appends_through_the_object_path(root: StateRoot) -> None:
    TopicCatalog(root).create("events", 2)
    log = TopicLog(root, "events")
    first = log.produce([ProducerRecord(b"a", partition=0), ProducerRecord(b"b", partition=1)])
    second = log.produce([ProducerRecord(b"c", partition=0)])
    assert first.assigned == ((0, 0), (1, 0)) and second.assigned == ((0, 1),)
    commit = objects.read(root.topic_path("events"), f"_delta_log/{second.version:020d}.json")
    assert commit is not None and COMMIT_ID_KEY.encode() in commit


def test_a_lease_renewal_whose_response_is_lost_is_recognised(
        s3_server: S3Server, s3_bucket: str, proxy: ProxyProcess) -> None:
    location = parse_location(f"s3://{s3_bucket}/lease", environ={**s3_server.env, "AWS_ENDPOINT_URL": proxy.endpoint})
    table = LeaseTable(location, config=test_lease.CONFIG)
    held = table.try_acquire("holder", "127.0.0.1:1")
    assert held is not None
    proxy.drop_response_to_put_of(f"_delta_log/{held.info.version + 1:020d}.json")

    renewed = table.renew(held)

    assert proxy.dropped() == 1, "the proxy lost no response: the test did not test anything"
    assert renewed.info.version == held.info.version + 1
    current = table.read_current()
    assert current is not None and (current.version, current.holder) == (renewed.info.version, "holder")


def test_a_topic_creation_whose_response_is_lost_is_recognised(
        s3_server: S3Server, s3_bucket: str, proxy: ProxyProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**s3_server.env, "AWS_ENDPOINT_URL": proxy.endpoint}.items():
        monkeypatch.setenv(name, value)
    root = StateRoot.open(f"s3://{s3_bucket}/root", create=True)
    catalog = TopicCatalog(root)
    catalog.create("first", 1)  # the catalog table exists: version 0 (created), 1 (first)
    proxy.drop_response_to_put_of(f"catalog/_delta_log/{2:020d}.json")

    created = catalog.create("second", 3)

    assert proxy.dropped() == 1, "the proxy lost no response: the test did not test anything"
    assert created.partitions == 3
    assert TopicCatalog(StateRoot.open(root.location)).partition_counts() == {"first": 1, "second": 3}
