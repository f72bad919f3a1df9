"""``mirrorCommitsToKafka``'s commit tries again on an error Kafka calls retriable, and never raises (the group in
the state root is the one that counts). librdkafka's consumer is replaced by one that answers from a list: a broker
that fails a commit with a retriable error on demand cannot be had here."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaPartition
from kafka.structs import TopicPartition

from groupcoord.source import query_member
from groupcoord.source.query_member import MIRROR_ATTEMPTS, KafkaCommitMirror

TP = TopicPartition("t", 0)


class ListedConsumer:
    """Answers each ``commit`` with the next answer: an exception to raise, or per-partition errors."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.commits: list[list[KafkaPartition]] = []

    def commit(self, *, offsets: list[KafkaPartition], asynchronous: bool) -> list[Any]:
        assert not asynchronous
        self.commits.append(offsets)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return [KafkaPartition(p.topic, p.partition, p.offset) if answer is None else _failed(p, answer)
                for p in offsets]


def _failed(partition: KafkaPartition, error: KafkaError) -> Any:
    """A commit result with an error (librdkafka's results carry one; confluent-kafka's class cannot be given one)."""
    return SimpleNamespace(topic=partition.topic, partition=partition.partition, offset=partition.offset, error=error)


def _mirror(consumer: ListedConsumer) -> KafkaCommitMirror:
    mirror = object.__new__(KafkaCommitMirror)
    mirror.group_id = "g"
    mirror._consumer = consumer  # type: ignore[assignment]
    return mirror


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query_member, "MIRROR_BACKOFF_S", 0.0)


def test_a_retriable_failure_is_tried_again_until_the_commit_lands() -> None:
    timed_out = KafkaError(KafkaError.REQUEST_TIMED_OUT, "timed out", retriable=True)
    consumer = ListedConsumer(KafkaException(timed_out), timed_out, None)
    _mirror(consumer).commit({TP: 7})
    assert len(consumer.commits) == 3 and [p.offset for p in consumer.commits[-1]] == [7]


def test_a_failure_that_is_not_retriable_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    denied = KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED, "denied", retriable=False)
    consumer = ListedConsumer(KafkaException(denied))
    _mirror(consumer).commit({TP: 7})
    assert len(consumer.commits) == 1
    assert "offsets not mirrored to the Kafka cluster" in caplog.text


def test_retries_stop_after_the_last_attempt(caplog: pytest.LogCaptureFixture) -> None:
    busy = KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE, "busy", retriable=True)
    consumer = ListedConsumer(*[busy] * MIRROR_ATTEMPTS)
    _mirror(consumer).commit({TP: 7})
    assert len(consumer.commits) == MIRROR_ATTEMPTS
    assert "t-0: " in caplog.text
