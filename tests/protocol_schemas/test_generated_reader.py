"""The generated readers (:mod:`groupcoord.protocol.schemas.generated_reader`) against the interpretive one: for
every schema and version the generated reader reads a regular frame to the same value, keys in the same order; it
never accepts changed bytes that the interpretive reader refuses; and where it steps aside the interpretive reader's
answer stands."""

from __future__ import annotations

import random
from typing import Any

import pytest

from groupcoord.protocol.schemas import CodecError, decode, decode_prefix, encode, load_schemas, message_schema
from groupcoord.protocol.schemas.generated import Irregular
from groupcoord.protocol.schemas.generated_reader import struct_reader
from groupcoord.protocol.schemas.model import MessageSpec
from tests.protocol_schemas.values import SampleValues, tagged_at_default

WITH_VERSIONS = sorted(name for name, spec in load_schemas().items() if not spec.valid_versions.empty)


def generated(spec: MessageSpec, version: int, data: bytes) -> dict[str, Any]:
    """The generated reader's value of the whole of ``data`` (raises when it steps aside)."""
    value, end = struct_reader(spec.struct, version, version in spec.flexible_versions)(data, 0, len(data))
    assert end == len(data)
    return value


@pytest.mark.parametrize("name", WITH_VERSIONS)
def test_the_generated_reader_reads_every_regular_message_as_the_interpretive_one(name: str) -> None:
    spec = message_schema(name)
    for version in range(spec.valid_versions.lowest, spec.valid_versions.highest + 1):
        value = tagged_at_default(spec.struct, version, SampleValues(seed=version).message(spec, version))
        data = encode(spec, version, value)
        fast = generated(spec, version, data)
        slow = decode(spec, version, data, generated=False)
        assert fast == slow == value, f"{name} v{version}"
        assert list(fast) == list(slow), f"{name} v{version}: key order"


@pytest.mark.parametrize(("name", "version"), [
    ("OffsetCommitRequest", 8), ("OffsetCommitRequest", 10), ("JoinGroupRequest", 9), ("SyncGroupRequest", 5),
    ("ConsumerGroupHeartbeatRequest", 1), ("ConsumerGroupHeartbeatResponse", 1), ("FetchRequest", 12),
    ("MetadataResponse", 12), ("RequestHeader", 2),
])
def test_changed_bytes_are_read_alike_or_left_to_the_interpretive_reader(name: str, version: int) -> None:
    spec = message_schema(name)
    data = encode(spec, version, SampleValues(seed=7).message(spec, version))
    chooser = random.Random(f"{name}-{version}")
    agreed = stepped_aside = 0
    for _ in range(400):
        changed = bytearray(data)
        for _ in range(chooser.randint(1, 3)):
            changed[chooser.randrange(len(changed))] = chooser.randrange(256)
        cut = chooser.randint(len(changed) // 2, len(changed)) if chooser.random() < 0.25 else len(changed)
        frame = bytes(changed[:cut])
        try:
            fast, end = struct_reader(spec.struct, version, version in spec.flexible_versions)(frame, 0, len(frame))
        except Exception:  # stepped aside: decode() then gives the interpretive reader's answer
            stepped_aside += 1
            continue
        slow, slow_end = decode_prefix_interpreted(spec, version, frame)
        assert (fast, end) == (slow, slow_end)
        agreed += 1
    assert agreed > 0 and stepped_aside > 0, (agreed, stepped_aside)


def decode_prefix_interpreted(spec: MessageSpec, version: int, frame: bytes) -> tuple[dict[str, Any], int]:
    """The interpretive reader's value and end; fails the test when it refuses what the generated one read."""
    try:
        return decode_prefix(spec, version, frame, generated=False)
    except CodecError as error:
        pytest.fail(f"the generated reader accepted bytes the interpretive one refuses: {error}")


def test_tagged_fields_and_nulls_where_not_nullable_are_irregular() -> None:
    spec = message_schema("OffsetCommitRequest")
    regular = tagged_at_default(spec.struct, 9, SampleValues(seed=1).message(spec, 9))
    data = encode(spec, 9, regular)
    reader = struct_reader(spec.struct, 9, True)
    with pytest.raises(Irregular):
        reader(data[:-1] + b"\x01", 0, len(data))  # the top-level struct says one tagged field follows
    with pytest.raises(Irregular):
        reader(b"\x00" + data[1:], 0, len(data))  # GroupId: compact length 0 is null, and it is not nullable
    assert decode(spec, 9, data) == regular
