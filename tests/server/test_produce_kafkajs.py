"""kafkajs (node, installed into ``tests/clients/node`` by ``make install``) produces into the embedded topic log:
every field kept, uncompressed and gzip (kafkajs's built-in codecs), acks=all."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicLog, TopicsConfig
from groupcoord.topics.appender import TopicAppender
from groupcoord.topics.embedded import EmbeddedTopics
from groupcoord.topics.log_table import CREATE_TIME
from groupcoord.topics.record_columns import datetime_to_millis
from tests.server.conftest import RunningEndpoint

pytestmark = [pytest.mark.integration, pytest.mark.node]

NODE_DIR = Path(__file__).resolve().parents[1] / "clients" / "node"
TOPIC = "events"
WHEN_MS = 1_767_225_600_000
COUNT = 5

_PRODUCER = r"""
const { Kafka, CompressionTypes, logLevel } = require("kafkajs");
const [bootstrap, topic, codec, count, when] = process.argv.slice(-5);
const kafka = new Kafka({ clientId: "kafkajs-produce", brokers: [bootstrap], logLevel: logLevel.WARN });
const producer = kafka.producer({ allowAutoTopicCreation: false });
(async () => {
  await producer.connect();
  const messages = [];
  for (let n = 0; n < Number(count); n++) {
    messages.push({ partition: 1, key: n % 2 ? null : `key-${n}`, value: `js-${n}`,
                    headers: { n: String(n), trace: ["a", "b"] }, timestamp: String(Number(when) + n) });
  }
  const compression = codec === "gzip" ? CompressionTypes.GZIP : CompressionTypes.None;
  const answers = await producer.send({ topic, acks: -1, messages, compression });
  await producer.disconnect();
  console.log(JSON.stringify(answers.map((a) => [a.partition, a.errorCode, a.baseOffset])));
})().catch((error) => { console.error(error); process.exit(1); });
"""


@pytest.fixture
def served(tmp_path: Path, start_endpoint: Callable[..., RunningEndpoint]) -> Iterator[tuple[StateRoot, str]]:
    if shutil.which("node") is None or not (NODE_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.skip("node or kafkajs is not installed (make install)")
    root = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(root).create(TOPIC, 2)
    topics = EmbeddedTopics(root)
    appender = TopicAppender(root, config=TopicsConfig())
    running = start_endpoint(build_dispatcher(topics=topics, topic_reader=topics, topic_writer=appender))
    yield root, running.bootstrap
    appender.close()


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_kafkajs_produces_every_field(served: tuple[StateRoot, str], codec: str) -> None:
    root, bootstrap = served
    run = subprocess.run(["node", "-e", _PRODUCER, bootstrap, TOPIC, codec, str(COUNT), str(WHEN_MS)],
                         cwd=NODE_DIR, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == [[1, 0, "0"]]  # one batch, acknowledged at offset 0
    records = TopicLog(StateRoot.open(root.path), TOPIC).read_records(1, 0, 100)
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp_type, r.compression) for r in records] == [
        (n, None if n % 2 else b"key-%d" % n, b"js-%d" % n, (("n", str(n).encode()), ("trace", b"a"), ("trace", b"b")),
         CREATE_TIME, codec) for n in range(COUNT)]
    assert [datetime_to_millis(r.timestamp) for r in records] == [WHEN_MS + n for n in range(COUNT)]
