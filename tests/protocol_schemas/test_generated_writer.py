"""The generated writers (:mod:`groupcoord.protocol.schemas.generated_writer`) against the interpretive one: for every
schema and version a regular value is written to the same bytes; a value changed into something irregular or wrong
is either still written alike or left to the interpretive writer, which then writes it or refuses it."""

from __future__ import annotations

import enum
import random
import uuid
from typing import Any

import pytest

from groupcoord.protocol.schemas import CodecError, encode, load_schemas, message_schema
from groupcoord.protocol.schemas.generated import Irregular
from groupcoord.protocol.schemas.generated_writer import struct_writer
from groupcoord.protocol.schemas.model import MessageSpec
from tests.protocol_schemas.values import SampleValues, regular, tagged_at_default

WITH_VERSIONS = sorted(name for name, spec in load_schemas().items() if not spec.valid_versions.empty)


class _Code(enum.IntEnum):
    NONE = 0


def generated(spec: MessageSpec, version: int, value: Any) -> bytes:
    """The generated writer's bytes (raises when it steps aside)."""
    out = bytearray()
    struct_writer(spec.struct, version, version in spec.flexible_versions)(out, value)
    return bytes(out)


@pytest.mark.parametrize("name", WITH_VERSIONS)
def test_the_generated_writer_writes_every_regular_message_as_the_interpretive_one(name: str) -> None:
    spec = message_schema(name)
    for version in range(spec.valid_versions.lowest, spec.valid_versions.highest + 1):
        value = tagged_at_default(spec.struct, version, SampleValues(seed=version).message(spec, version))
        expected = encode(spec, version, value, generated=False)
        assert generated(spec, version, regular(spec.struct, version, value)) == expected, f"{name} v{version}"


WRONG_VALUES: list[Any] = [None, -1, 2**40, 2**70, "x", "é" * 20000, b"\x00", True, 1.5, [], {}, (), uuid.UUID(int=1),
                           _Code.NONE, "\ud800"]


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (dict keys and list indexes)."""
    if isinstance(value, dict):
        return [path] + [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]
    if isinstance(value, list):
        return [path] + [leaf for index, item in enumerate(value) for leaf in _leaves(item, (*path, index))]
    return [path]


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


@pytest.mark.parametrize(("name", "version"), [
    ("OffsetCommitResponse", 8), ("OffsetCommitResponse", 10), ("OffsetFetchResponse", 9),
    ("ConsumerGroupHeartbeatResponse", 1), ("ConsumerGroupDescribeResponse", 1), ("DeleteGroupsResponse", 2),
    ("DescribeTopicPartitionsResponse", 0), ("ResponseHeader", 1), ("RequestHeader", 1),
])
def test_changed_values_are_written_alike_or_left_to_the_interpretive_writer(name: str, version: int) -> None:
    spec = message_schema(name)
    sample = SampleValues(seed=3).message(spec, version)
    base = regular(spec.struct, version, tagged_at_default(spec.struct, version, sample))
    chooser = random.Random(f"{name}-{version}")
    leaves = _leaves(base)[1:]  # not the whole message
    written = stepped_aside = 0
    for _ in range(400):
        changed = _replaced(base, chooser.choice(leaves), chooser.choice(WRONG_VALUES))
        if chooser.random() < 0.2:
            changed = {**changed, chooser.choice(["Nope", "_unknownTaggedFields"]): 1}
        try:
            fast = generated(spec, version, changed)
        except Exception:  # stepped aside: encode() then gives the interpretive writer's answer
            stepped_aside += 1
            continue
        try:
            slow = encode(spec, version, changed, generated=False)
        except CodecError as error:
            pytest.fail(f"the generated writer wrote a value the interpretive one refuses: {error}")
        assert fast == slow
        written += 1
    assert written > 0 and stepped_aside > 0, (written, stepped_aside)


def test_an_int_enum_a_missing_struct_and_an_unknown_key_are_irregular_but_still_encode() -> None:
    spec = message_schema("OffsetCommitResponse")
    value = {"ThrottleTimeMs": 0, "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 1, "ErrorCode": 0}]}]}
    reader = struct_writer(spec.struct, 8, True)
    for irregular in ({**value, "ThrottleTimeMs": _Code.NONE}, {**value, "Nope": 1}):
        with pytest.raises(Irregular):
            reader(bytearray(), irregular)
    assert encode(spec, 8, {**value, "ThrottleTimeMs": _Code.NONE}) == encode(spec, 8, value)
    with pytest.raises(CodecError, match="Nope"):
        encode(spec, 8, {**value, "Nope": 1})
