"""What a scenario observes, normalised so that only differences a client could care about remain.

A scenario records steps (a label and a value: a decoded response as a dict, or anything comparable). Before two
targets' steps are compared, what legitimately differs is replaced:

- member ids keep their prefix (the client or instance id) but their uuid becomes ``<uuid1>``, ``<uuid2>``... in
  order of first appearance (a member id that is a bare uuid in Kafka's base64 form too);
- lists that Kafka answers in hash order (members, topics, partitions, DeleteGroups results) are sorted;
- error codes become Kafka's error names (``REBALANCE_IN_PROGRESS``), so a diff reads as prose;
- throttle times are dropped; a client host loses Kafka's leading ``/`` (``test_describe_shows_the_client_host``
  compares it unnormalised).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
import pytest

from tests.parity.targets import Target

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_KAFKA_UUID = re.compile(r"[A-Za-z0-9_-]{22}")
"""A uuid in Kafka's ``Uuid.toString()`` form (URL-safe base64, unpadded), the member id Kafka gives a classic member
joining a consumer group; named like the other uuids where a member id is expected (:data:`_MEMBER_ID_FIELDS`)."""
_MEMBER_ID_FIELDS = frozenset({"member_id", "leader", "MemberId"})
_DROPPED = frozenset({"throttle_time_ms"})
_LIST_ORDER = {"members": "member_id", "topics": "name", "partitions": "partition_index", "results": "group_id"}
"""Lists Kafka answers in hash order, compared sorted by this field (member ids after their uuids are named)."""

Step = tuple[str, Any]


def error_name(code: int) -> str:
    """Kafka's name of an error code, e.g. ``MEMBER_ID_REQUIRED``."""
    return str(kafka.errors.for_code(code).message)


@dataclass
class Observation:
    """The steps one scenario recorded on one target, in order."""

    steps: list[Step] = field(default_factory=list)

    def add(self, label: str, value: Any) -> None:
        """Record ``value`` (a kafka-python response, a dict, or a plain value) under ``label``."""
        self.steps.append((label, value.to_dict() if hasattr(value, "to_dict") else value))

    def normalised(self) -> list[Step]:
        """The steps with member ids, error codes, throttle times and hosts normalised (see the module docstring)."""
        uuids: dict[str, str] = {}

        def uuid_label(match: re.Match[str]) -> str:
            return uuids.setdefault(match.group(0), f"<uuid{len(uuids) + 1}>")

        def walk(value: Any, key: str = "") -> Any:
            if isinstance(value, dict):
                return {k: walk(v, k) for k, v in value.items() if k not in _DROPPED}
            if isinstance(value, list | tuple):
                items = [walk(item, key) for item in value]
                sort_key = _LIST_ORDER.get(key, "")
                if all(isinstance(item, dict) and sort_key in item for item in items):
                    return sorted(items, key=lambda item: item[sort_key])
                return items
            if isinstance(value, str) and key in _MEMBER_ID_FIELDS and (bare := _KAFKA_UUID.fullmatch(value)):
                return uuid_label(bare)
            if isinstance(value, str):
                text = _UUID.sub(uuid_label, value)
                return text.lstrip("/") if key == "client_host" else text
            if key == "error_code" and isinstance(value, int):
                return error_name(value)
            return value

        return [(label, walk(value)) for label, value in self.steps]


Scenario = Callable[..., Observation]


def differs(difference: str) -> pytest.MarkDecorator:
    """Mark a case where groupcoord is known to answer otherwise than Kafka (listed in docs/compatibility.md).

    Strict: the case fails loudly once groupcoord behaves as Kafka does, so the mark and the list get updated.
    """
    return pytest.mark.xfail(strict=True, reason=f"{difference} (see docs/compatibility.md)")


def assert_parity(targets: Sequence[Target], scenario: Scenario, *args: Any) -> None:
    """Run ``scenario(target, *args)`` on each target in turn; every target's steps must equal the first's (Kafka).

    The message names the first step that differs, with both answers, before pytest's full diff.
    """
    reference, *others = targets
    expected = scenario(reference, *args).normalised()
    for target in others:
        actual = scenario(target, *args).normalised()
        differing = [f"step {i} {a[0]!r}:\n  {reference.name}: {a[1]}\n  {target.name}: {b[1]}"
                     for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b]
        if len(actual) != len(expected):
            differing.append(f"{reference.name} recorded {len(expected)} steps, {target.name} {len(actual)}")
        assert actual == expected, f"{target.name} differs from {reference.name} at\n" + "\n".join(differing)
