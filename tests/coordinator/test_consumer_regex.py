"""Regular-expression subscriptions of consumer groups (KIP-848's ``SubscribedTopicRegex``), in the core.

RE2 syntax, as Kafka's RE2/J reads it, matched against whole topic names; the topics of the latest metadata
snapshot; a new matching topic moves the group to a new epoch; a regex that does not compile is
INVALID_REGULAR_EXPRESSION with Kafka's message and changes nothing.
"""

from __future__ import annotations

import dataclasses
import re
import uuid

import pytest

from groupcoord.coordinator.consumer_topics import matching_topics
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.protocol.errors import Errors
from tests.coordinator.consumer_context import CONFIG, REBALANCE_MS, TOPICS, ConsumerGroupContext, T, U


def _join_regex(ctx: ConsumerGroupContext, member_id: str, regex: str) -> ConsumerGroupHeartbeatResponse:
    return ctx.heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id=member_id, member_epoch=0, rebalance_timeout_ms=REBALANCE_MS,
        subscribed_topic_names=(), subscribed_topic_regex=regex, topic_partitions={}, api_version=1))


def test_re2_syntax_where_python_differs() -> None:
    """``\\p{L}`` is RE2's letter class (Python's ``re`` refuses it); matches are of the whole name."""
    with pytest.raises(re.error):
        re.compile(r"\p{L}+")
    assert matching_topics(r"\p{L}+", ["orders", "orders2", "été"]) == {"orders", "été"}
    assert matching_topics("ord", ["orders", "ord"]) == {"ord"}


def test_a_regex_member_gets_every_partition_of_the_topics_it_matches() -> None:
    ctx = ConsumerGroupContext(InMemoryRecordLog())
    joined = _join_regex(ctx, "a", "[tu]")
    assert joined.error == Errors.NONE and joined.assignment == {T: frozenset(range(4)), U: frozenset(range(2))}
    group = ctx.coordinator.consumer_group("g")
    assert group is not None
    member = group.members["a"]
    assert member.subscribed_topic_regex == "[tu]" and member.subscribed_topic_names == frozenset()


def test_a_new_matching_topic_moves_the_group_to_a_new_epoch_and_is_assigned() -> None:
    ctx = ConsumerGroupContext(InMemoryRecordLog())
    joined = _join_regex(ctx, "a", "t.*")
    assert joined.assignment == {T: frozenset(range(4))}
    new = uuid.UUID(int=0x9)
    counts = {name: count for name, (_, count) in TOPICS.items()} | {"t2": 3}
    ids = {name: topic_id for name, (topic_id, _) in TOPICS.items()} | {"t2": new}
    ctx.absorb(ctx.coordinator.on_metadata_change(counts, ctx.now, topic_ids=ids))
    group = ctx.coordinator.consumer_group("g")
    assert group is not None and group.group_epoch == joined.member_epoch + 1
    answer = ctx.beat("a", joined.member_epoch, {T: range(4)})
    assert answer.assignment == {T: frozenset(range(4)), new: frozenset(range(3))}


def test_a_regex_that_does_not_compile_is_refused_with_kafkas_message_and_writes_nothing() -> None:
    ctx = ConsumerGroupContext(InMemoryRecordLog())
    refused = _join_regex(ctx, "a", r"a\Z")
    assert refused.error == Errors.INVALID_REGULAR_EXPRESSION
    assert refused.error_message is not None and refused.error_message.startswith(
        r"SubscribedTopicRegex `a\Z` is not a valid regular expression: ")
    assert ctx.records == [] and ctx.coordinator.consumer_group("g") is None


KAFKA_DESCRIPTIONS = {
    "orders(": "missing closing )",
    "a)": "regexp/syntax: internal error",
    "[a": "missing closing ]",
    "[z-a]": "invalid character class range",
    "a**": "invalid nested repetition operator",
    "a++": "invalid nested repetition operator",
    "x{2,1}": "invalid repeat count",
    "a{1001}": "invalid repeat count",
    "\\": "trailing backslash at end of expression",
    "(?<": "invalid named capture",
    "(?P<>a)": "invalid named capture",
    "(?i": "invalid or unsupported Perl syntax",
    "\\8": "invalid escape sequence",
    "[a-\\d]": "invalid escape sequence",
    "*a": "missing argument to repetition operator",
    "[[:foo:]]": "invalid character class range",
    "\\pX": "invalid character class range",
    "(?P<n>a)(?P<n>b)": "duplicate capture group name",
}
"""Patterns and the description in Kafka 4.4.0's INVALID_REGULAR_EXPRESSION message for each (RE2/J's words), as
its coordinator answered them on 2026-11-28."""


@pytest.mark.parametrize(("regex", "description"), KAFKA_DESCRIPTIONS.items(), ids=list(KAFKA_DESCRIPTIONS))
def test_the_message_of_a_bad_regex_is_kafkas_word_for_word(regex: str, description: str) -> None:
    refused = _join_regex(ConsumerGroupContext(InMemoryRecordLog()), "a", regex)
    assert refused.error == Errors.INVALID_REGULAR_EXPRESSION
    assert refused.error_message == f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}."


def test_offsets_of_a_topic_the_regex_matches_do_not_expire_and_others_do() -> None:
    ctx = ConsumerGroupContext(InMemoryRecordLog(), config=dataclasses.replace(CONFIG, offsets_retention_ms=30_000))
    joined = _join_regex(ctx, "a", "u")
    for topic in ("t", "u"):
        ctx.call(OffsetCommitRequest(group_id="g", generation_id=joined.member_epoch, member_id="a",
                                     topics=(OffsetCommitTopic(topic, (OffsetCommitPartition(0, 3),)),)))
    ctx.clock.advance(30_000)
    ctx.absorb(ctx.coordinator.expire_offsets(ctx.now))
    assert {(t, p) for _, t, p, _ in ctx.coordinator.hard_state().offsets} == {("u", 0)}
