"""Kafka's topic-name rule: ``[a-zA-Z0-9._-]{1,249}``, and neither ``.`` nor ``..``.

Kafka also refuses a name that differs from an existing one only by ``.`` versus ``_``, because both map to the same
metric name; :func:`collision_key` gives the form under which such names collide.
"""

from __future__ import annotations

import re

from groupcoord.topics.errors import InvalidTopicError

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> str:
    """Return ``name`` if Kafka would accept it as a topic name, else raise :class:`InvalidTopicError`."""
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty.")
    if name in (".", ".."):
        raise InvalidTopicError(f"Topic name cannot be '{name}'.")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name has {len(name)} characters."
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f"Topic name {name!r} is illegal, it contains a character other than ASCII alphanumerics, '.', '_' "
            "and '-'."
        )
    return name


def collision_key(name: str) -> str:
    """The form under which two names collide: ``.`` and ``_`` are the same character."""
    return name.replace(".", "_")
