"""One ordered log: the CLI's produce, the Python API and Produce over the wire write one partition at once, and
none loses or reorders another's records."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaProducer

from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.server.endpoint import EndpointConfig
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicLog, TopicsConfig
from groupcoord.topics.appender import TopicAppender
from groupcoord.topics.embedded import EmbeddedTopics
from tests.server.conftest import RunningEndpoint

pytestmark = pytest.mark.integration

TOPIC = "mixed"
PER_WRITER = 200

_API_WRITER = r"""
import sys, time
from pathlib import Path
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicLog, TopicsConfig
location, topic, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
log = TopicLog(StateRoot.open(location), topic, config=TopicsConfig(commit_backoff_ms=1))
log.partitions()
Path(sys.argv[5]).touch()
while not go.exists():
    time.sleep(0.005)
for start in range(0, count, 10):
    log.produce([ProducerRecord(b"api-%03d" % i, partition=0) for i in range(start, min(start + 10, count))])
"""

_CLI_WRITER = r"""
import sys, time
from pathlib import Path
from groupcoord.cli.main import main
go = Path(sys.argv[1])
Path(sys.argv[2]).touch()
while not go.exists():
    time.sleep(0.005)
sys.exit(main(sys.argv[3:]))
"""


@pytest.fixture
def root(tmp_path: Path) -> Iterator[tuple[StateRoot, RunningEndpoint, TopicAppender]]:
    state = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(state).create(TOPIC, 2)
    topics = EmbeddedTopics(state)
    appender = TopicAppender(state, config=TopicsConfig(commit_backoff_ms=1))
    running = RunningEndpoint(build_dispatcher(topics=topics, topic_reader=topics, topic_writer=appender),
                              EndpointConfig())
    yield state, running, appender
    running.close()
    appender.close()


def test_cli_python_api_and_produce_share_a_partition_without_loss_or_reordering(
    root: tuple[StateRoot, RunningEndpoint, TopicAppender], tmp_path: Path
) -> None:
    state, running, _ = root
    go, cli_ready, api_ready = tmp_path / "go", tmp_path / "cli-ready", tmp_path / "api-ready"
    cli_input = "".join(f"cli-{i:03d}\n" for i in range(PER_WRITER)).encode()  # one keyless record a line
    cli = subprocess.Popen(
        [sys.executable, "-c", _CLI_WRITER, str(go), str(cli_ready), "topics", "produce", TOPIC,
         "--state-root", str(state.path), "--partition", "0", "--batch-records", "10"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    api = subprocess.Popen([sys.executable, "-c", _API_WRITER, str(state.path), TOPIC, str(PER_WRITER), str(go),
                            str(api_ready)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    producers = [KafkaProducer(bootstrap_servers=running.bootstrap, linger_ms=2, batch_size=400) for _ in range(2)]
    failures: list[BaseException] = []

    def produce(n: int) -> None:
        try:
            for start in range(0, PER_WRITER, 10):  # a dozen requests, each acknowledged before the next
                futures = [producers[n].send(TOPIC, b"wire%d-%03d" % (n, i), partition=0)
                           for i in range(start, start + 10)]
                for future in futures:
                    future.get(timeout=60)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(2)]
    deadline = time.monotonic() + 60
    while not (cli_ready.exists() and api_ready.exists()) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # a start barrier once every writer is ready, so they really overlap
    for thread in threads:
        thread.start()
    _, cli_err = cli.communicate(cli_input, timeout=180)
    _, api_err = api.communicate(timeout=180)
    for thread in threads:
        thread.join(120)
    for producer in producers:
        producer.close()
    assert (cli.returncode, api.returncode, failures) == (0, 0, []), (cli_err[-2000:], api_err[-2000:])

    records = TopicLog(StateRoot.open(state.path), TOPIC).read_records(0, 0, 10 * PER_WRITER)
    assert [r.offset for r in records] == list(range(4 * PER_WRITER))  # dense, nothing lost or doubled
    values = [r.value.decode() for r in records if r.value is not None]
    for writer in ("cli", "api", "wire0", "wire1"):
        mine = [v for v in values if v.startswith(f"{writer}-")]
        assert mine == [f"{writer}-{i:03d}" for i in range(PER_WRITER)], f"{writer}'s records lost or reordered"
    # The writers really overlapped: some writer's records are not one contiguous run.
    runs = sum(1 for previous, value in itertools.pairwise(values)
               if previous.split("-")[0] != value.split("-")[0])
    assert runs > 3, "the writers did not overlap"
