"""An S3 server restarted under a state root: every request made while it is down is retried with backoff and
succeeds once it is back (delta-rs's and obstore's ``object_store`` client, pyarrow's S3 client), instead of failing
after object_store's default ten retries (2 to 5 s, shorter than a restart). The lease asks for a shorter budget: a
renewal must not outlive the holder's serving window by more than ``lease.safety.ms``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.s3_server import RestartableVersitygw
from groupcoord.log.config import LeaseConfig
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.lease import LeaseTable
from groupcoord.state_root import StateRoot
from groupcoord.storage import objects
from groupcoord.storage.tables import is_table, table_filesystem
from tests.log.storage_helpers import offset

pytestmark = pytest.mark.integration

DOWN_S = 4.0
"""Longer than object_store's default retries lasted here (2.2 to 4.9 s)."""


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RestartableVersitygw]:
    """A versitygw of this test's own (the session's is shared: it must not go down)."""
    with RestartableVersitygw(tmp_path / "s3", down_s=DOWN_S) as running:
        for name, value in running.server.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("AWS_S3_ALLOW_UNSAFE_RENAME", raising=False)
        yield running


def _during_outage(server: RestartableVersitygw, call: Callable[[], Any]) -> Any:
    """Stop the server, run ``call`` while it is down, start the server again :data:`DOWN_S` later; ``call``'s
    result (or its exception, raised here).

    The server is started again by another thread of this process, and a third one ticks every 0.1 s: a call that
    kept the GIL through its retries (delta-rs's ``is_deltatable`` does) would stall both, so the process's other
    work (a coordinator's event loop, a watcher restarting the server) with it: the ticks show it did not.
    """
    ticks = 0
    done = threading.Event()

    def back() -> None:
        time.sleep(DOWN_S)
        server.start()

    def tick() -> None:
        nonlocal ticks
        while not done.wait(0.1):
            ticks += 1

    server.stop(kill=True)
    threads = [threading.Thread(target=back), threading.Thread(target=tick)]
    for thread in threads:
        thread.start()
    try:
        started = time.monotonic()
        result = call()
        assert time.monotonic() - started >= DOWN_S * 0.9  # it did wait for the server
        assert ticks >= DOWN_S  # ~10 a second expected; none at all while a call holds the GIL
        return result
    finally:
        done.set()
        for thread in threads:
            thread.join()


def test_reads_and_commits_made_while_the_server_is_down_succeed_once_it_is_back(
        server: RestartableVersitygw) -> None:
    root = StateRoot.open(f"s3://{server.server.create_bucket('outage')}/root", create=True)
    log = DeltaRecordLog(root.log_path)
    version = log.append([offset("g", 0, 1)], expected_version=-1)
    # delta-rs: a conditional commit, retried through the outage, lands once.
    assert _during_outage(server, lambda: log.append([offset("g", 0, 2)], expected_version=version)) == version + 1
    assert DeltaRecordLog(root.log_path).load().version == version + 1
    # obstore (groupcoord's own objects) and pyarrow (the sink's files).
    assert _during_outage(server, lambda: objects.exists(root.location, "_groupcoord/format.json"))
    assert _during_outage(server, lambda: is_table(root.log_path))
    assert not _during_outage(server, lambda: is_table(root.location / "nothing-here"))
    files = table_filesystem(root.log_path)
    assert _during_outage(server, lambda: files.get_file_info("_delta_log").type.name) == "Directory"


def test_the_lease_retries_for_no_longer_than_its_safety_margin(server: RestartableVersitygw) -> None:
    root = StateRoot.open(f"s3://{server.server.create_bucket('lease')}/root", create=True)
    lease = LeaseTable(root.lease_path, config=LeaseConfig(safety_ms=1500))
    assert lease.path.options["retry_timeout"] == "1500ms"
    assert root.location.options["retry_timeout"] == "30000ms"



@pytest.mark.faults
def test_serve_whose_s3_goes_down_steps_down_in_its_lease_and_serves_again_when_it_is_back(
        server: RestartableVersitygw, tmp_path: Path) -> None:
    """serve keeps its lease only while it can renew it: with the S3 server killed, the failed renewal is logged and
    serve steps down within the lease's safe window (it used to stall, silent, for the 30 s of a retried request
    that kept the GIL), stands by while the storage is down, and serves again, every acknowledged offset kept, once
    the storage is back."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from tests.host.conftest import ServeProcess, wait_for
    from tests.s3.test_serve_s3 import PARTITIONS, TOPIC, _commit_as_a_member, _joined_consumer, _root_with_topics

    uri = _root_with_topics(f"s3://{server.server.create_bucket('serve-outage')}/root")
    serve = ServeProcess(uri, "--conf", "group.initial.rebalance.delay.ms=0", env=server.server.env,
                         log_path=tmp_path / "serve.log")
    try:
        address = serve.wait_ready(60)
        offsets = {TopicPartition(TOPIC, p): OffsetAndMetadata(10 + p, "", -1) for p in range(PARTITIONS)}
        consumer = _commit_as_a_member(_joined_consumer(address), offsets, address)
        consumer.close(autocommit=False)

        server.stop(kill=True)
        # FAST_LEASE: renewals every 0.5 s, a 3 s lease, 1 s of safety; each renewal retries for 1 s at most.
        wait_for(lambda: "no longer serving" in serve.stderr(), 15, "serve stepping down with its storage gone")
        assert "lease renewal failed" in serve.stderr()
        server.start()
        address = serve.wait_ready(60)  # took the lease again: a new term, loaded from S3
        again = KafkaConsumer(group_id="g1", bootstrap_servers=f"{address.host}:{address.port}",
                              enable_auto_commit=False, request_timeout_ms=10000)
        assert {tp.partition: again.committed(tp) for tp in offsets} == {p: 10 + p for p in range(PARTITIONS)}
        again.close(autocommit=False)
    finally:
        serve.close()
