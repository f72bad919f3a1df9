"""Kafka's topic-name rule."""

from __future__ import annotations

import pytest

from groupcoord.topics.errors import InvalidTopicError
from groupcoord.topics.names import collision_key, validate_topic_name


@pytest.mark.parametrize("name", ["events", "a", "A.b_c-9", "...", "x" * 249, "__consumer_offsets"])
def test_legal_names_are_accepted(name: str) -> None:
    assert validate_topic_name(name) == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "can't be empty"),
        (".", "cannot be '.'"),
        ("..", "cannot be '..'"),
        ("x" * 250, "longer than 249 characters"),
        ("has space", "illegal"),
        ("slash/name", "illegal"),
        ("ünïcode", "illegal"),
        ("tab\tname", "illegal"),
    ],
)
def test_illegal_names_raise_invalid_topic_with_kafka_code_17(name: str, message: str) -> None:
    with pytest.raises(InvalidTopicError, match=message) as caught:
        validate_topic_name(name)
    assert caught.value.error_code == 17


def test_dot_and_underscore_collide() -> None:
    assert collision_key("a.b") == collision_key("a_b")
    assert collision_key("a.b") != collision_key("a-b")
