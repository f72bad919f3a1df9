"""What a consumer-group member subscribes to: its topic names, and the topics its regular expression matches.

Kafka's coordinator reads a member's ``SubscribedTopicRegex`` with RE2/J; groupcoord with RE2 itself (the
``google-re2`` binding), so a pattern means the same on both: RE2 syntax, not Python's (``\\p{L}`` is a letter class,
``\\Z`` is an error), matched against the whole topic name. A regex that does not compile is
INVALID_REGULAR_EXPRESSION with Kafka's message (RE2/J's description of the error:
:mod:`groupcoord.coordinator.re2j_messages`). The topics a regex matches are those of the coordinator's latest
metadata snapshot: a topic created later joins the subscription at the next snapshot (Kafka refreshes a group's
regexes at most every ``group.consumer.regex.refresh.interval.ms``, persisting what they resolved to; groupcoord
resolves them from each snapshot, and a reloaded coordinator from its first one).
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

import re2

from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.re2j_messages import duplicate_group_name, re2j_description
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import ConsumerGroupMember
from groupcoord.protocol.errors import Errors, ProtocolError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a bad pattern is the client's error, answered on the wire, not logged by RE2


@functools.lru_cache(maxsize=1024)
def compiled_regex(regex: str) -> Any:
    """``regex`` compiled as RE2 reads it; INVALID_REGULAR_EXPRESSION (Kafka's message) when it does not compile."""
    try:
        compiled = re2.compile(regex, _OPTIONS)
    except re2.error as exc:
        raise _invalid(regex, re2j_description(_text(exc))) from None
    if duplicate_group_name(regex):
        raise _invalid(regex, "duplicate capture group name")
    return compiled


def _text(error: re2.error) -> str:
    (message,) = error.args or ("",)
    return message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)


def _invalid(regex: str, description: str) -> ProtocolError:
    return ProtocolError(Errors.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}.")


def matching_topics(regex: str, topics: Collection[str]) -> frozenset[str]:
    """The topics whose whole name ``regex`` matches."""
    pattern = compiled_regex(regex)
    return frozenset(topic for topic in topics if pattern.fullmatch(topic) is not None)


def member_topics(ctx: CoordinatorContext, member: ConsumerGroupMember,
                  known: Collection[str] | None = None) -> frozenset[str]:
    """The topics ``member`` subscribes to: its names, and the topics of ``known`` (by default the latest metadata
    snapshot) its regex matches."""
    if not member.subscribed_topic_regex:
        return member.subscribed_topic_names
    topics = ctx.topic_ids if known is None else known
    return member.subscribed_topic_names | matching_topics(member.subscribed_topic_regex, topics)


def group_topics(ctx: CoordinatorContext, group: ConsumerGroup, known: Collection[str] | None = None) -> frozenset[str]:
    """The topics any member of ``group`` subscribes to (see :func:`member_topics`)."""
    return frozenset().union(*(member_topics(ctx, m, known) for m in group.members.values()))
