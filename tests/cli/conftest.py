"""Fixtures of the CLI tests: a real state root with a produced topic, the CLI run in-process, offsets committed
through a real coordinator, and a live group with a kafka-python member."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import pytest
from kafka import KafkaConsumer

from groupcoord.admin.describe import committed_offsets
from groupcoord.admin.holder import admin_session
from groupcoord.cli.common import STATE_ROOT_ENV
from groupcoord.cli.main import main
from groupcoord.config import Config, resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.state.schema import GROUPS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog

TOPIC = "orders"
PARTITIONS = 3
RECORDS = 20
"""Records per partition: offsets 0..19, log-end 20."""
BASE_TIME = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)
"""Record ``i`` of every partition has timestamp ``BASE_TIME + i minutes``."""


@dataclass(frozen=True)
class CliRun:
    """The outcome of one CLI run: exit code, stdout, stderr."""

    code: int
    out: str
    err: str


Cli = Callable[..., CliRun]


def fast_config(**values: object) -> Config:
    """Configuration for tests: short sessions and no initial rebalance delay."""
    flags: dict[str, object] = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
    flags.update({k.replace("_", "."): v for k, v in values.items()})
    return resolve_config(flags=flags)


@pytest.fixture
def root(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> StateRoot:
    """A state root with topic ``orders`` (3 partitions x 20 records); ``$GROUPCOORD_STATE_ROOT`` points at it."""
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    state = StateRoot.open(tmp_path / "state", create=True)
    TopicCatalog(state).create(TOPIC, PARTITIONS)
    TopicLog(state, TOPIC).produce(
        ProducerRecord(f"v{p}-{i}".encode(), partition=p, timestamp=BASE_TIME + dt.timedelta(minutes=i))
        for p in range(PARTITIONS) for i in range(RECORDS))
    monkeypatch.setenv(STATE_ROOT_ENV, str(state.path))
    return state


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run ``groupcoord ARGV...`` in this process and capture what it printed."""

    def run(*argv: str) -> CliRun:
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's usage errors (exit 2)
            code = int(exc.code or 0)
        finally:
            _drop_cli_log_handlers()
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run


def _drop_cli_log_handlers() -> None:
    # main() logs to the sys.stderr of its run, which capsys closes afterwards: later logs must not go there.
    logger = logging.getLogger("groupcoord")
    for handler in [h for h in logger.handlers if getattr(h, "_groupcoord_stderr", False)]:
        logger.removeHandler(handler)
    logger.propagate = True
    logger.setLevel(logging.NOTSET)


def commit(root: StateRoot, group_id: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit ``offsets`` as simple commits through a coordinator of ``root`` (this process takes the lease)."""
    with admin_session(root, fast_config()) as client:
        errors = client.commit_offsets(group_id, offsets)
    assert all(not e.is_error for e in errors.values()), errors


def table_rows(text: str) -> list[list[str]]:
    """The whitespace-separated cells of every non-empty line of a printed table (header included)."""
    return [line.split() for line in text.splitlines() if line.strip()]


@dataclass
class LiveGroup:
    """A running coordinator with one kafka-python member of group ``group_id`` owning every partition."""

    coordinator: BackgroundCoordinator
    consumer: KafkaConsumer
    group_id: str


@pytest.fixture
def live_group(root: StateRoot) -> Iterator[LiveGroup]:
    """Group ``live`` with one active member (Stable, in the Delta state too) and offset 5 committed on every
    partition; stopped after the test."""
    # The initial rebalance delay lets the leader's first topic metadata arrive before it assigns (as in tests/server).
    coordinator = BackgroundCoordinator(root, fast_config(group_initial_rebalance_delay_ms=500),
                                        listen="127.0.0.1:0")
    address = coordinator.start(30.0)
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=address, group_id="live", enable_auto_commit=False,
                             session_timeout_ms=3000, heartbeat_interval_ms=300, request_timeout_ms=10000,
                             metadata_max_age_ms=300, client_id="cli-test-client")
    try:
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < PARTITIONS or not _stable_in_delta(root, "live"):
            assert time.monotonic() < deadline, "the member did not get every partition in time"
            consumer.poll(timeout_ms=100)
        from kafka.structs import OffsetAndMetadata, TopicPartition

        consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(5, "", -1) for p in range(PARTITIONS)})
        while len(committed_offsets(root, "live")) < PARTITIONS:  # the materializer flushes every 250 ms
            assert time.monotonic() < deadline, "the commit did not reach the Delta state in time"
            consumer.poll(timeout_ms=100)
        yield LiveGroup(coordinator, consumer, "live")
    finally:
        consumer.close()
        coordinator.stop()


def _stable_in_delta(root: StateRoot, group_id: str) -> bool:
    return any(r["group_id"] == group_id and r["state"] == "Stable" for r in read_view(root, GROUPS).to_pylist())
