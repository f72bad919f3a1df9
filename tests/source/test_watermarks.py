"""The Kafka reader's and planner's watermark check: a wrong answer from librdkafka's watermark query does not become
a data loss.

On a loaded machine librdkafka once answered a log start of 3 for a fresh partition that held offsets 0-2, and the
query failed on data loss that did not happen. That answer cannot be produced on demand, so these tests give the
reader's check a consumer whose queries answer from a list (the only stand-in here; the Kafka queries of
``test_source_queries`` and the retention test of ``tests/sink/test_sink_faults.py`` read from a real broker)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import TopicPartition

from groupcoord.source.records import WATERMARK_CONFIRMATIONS, watermarks


class AnsweringConsumer:
    """Answers each watermark query with the next of ``answers``."""

    def __init__(self, *answers: tuple[int, int]) -> None:
        self.answers = list(answers)
        self.asked = 0

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float, cached: bool) -> tuple[int, int]:
        self.asked += 1
        return self.answers.pop(0)


def in_range(low: int, high: int) -> Callable[[int, int], bool]:
    """The reader's doubt: the log does not hold all of ``[low, high)``."""
    return lambda start, end: low < start or high > end


def test_a_start_past_the_range_is_asked_again_and_the_smaller_start_is_believed() -> None:
    consumer = AnsweringConsumer((3, 3), (0, 3))
    assert watermarks(consumer, TopicPartition("t", 0), 1.0, in_range(0, 3)) == (0, 3)  # type: ignore[arg-type]
    assert consumer.asked == 2


def test_a_range_inside_the_log_is_asked_once() -> None:
    consumer = AnsweringConsumer((0, 3))
    assert watermarks(consumer, TopicPartition("t", 0), 1.0, in_range(1, 3)) == (0, 3)  # type: ignore[arg-type]
    assert consumer.asked == 1


def test_a_loss_that_every_answer_confirms_stays_a_loss() -> None:
    consumer = AnsweringConsumer(*[(5, 9)] * (1 + WATERMARK_CONFIRMATIONS))
    assert watermarks(consumer, TopicPartition("t", 0), 1.0, in_range(2, 12)) == (5, 9)  # type: ignore[arg-type]
    assert consumer.asked == 1 + WATERMARK_CONFIRMATIONS


def test_the_planner_asks_again_when_a_partition_looks_emptied() -> None:
    """The planner's doubt (``KafkaLogView.bounds``): a start equal to a non-zero end."""
    def emptied(start: int, end: int) -> bool:
        return 0 < start == end

    consumer = AnsweringConsumer((3, 3), (0, 3))
    assert watermarks(consumer, TopicPartition("t", 0), 1.0, emptied) == (0, 3)  # type: ignore[arg-type]
    assert watermarks(AnsweringConsumer((0, 0)), TopicPartition("t", 0), 1.0, emptied) == (0, 0)  # type: ignore[arg-type]
