"""Byte-for-byte agreement with kafka-python 3.0.12's protocol classes, an independent codec of the same protocol.

For every API message class kafka-python has and every version both it and Kafka 4.4.0's schemas define, the same
generated value is encoded by both, header included, and the frames must be identical; the new codec must also
decode kafka-python's frame back to the value. kafka-python builds its classes from its own copies of Kafka's JSON
schemas (``kafka/protocol/schemas/resources``), with a few patches: int32 ``AuthorizedOperations`` fields become
sets of bits, some renamed; those are translated here. A failure names the message, the version and the first
differing byte offset.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kafka.protocol import admin, consumer, metadata, producer
from kafka.protocol.api_message import ApiMessage

from groupcoord.protocol.schemas import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    load_schemas,
    message_schema,
)
from tests.protocol_schemas.values import SampleValues

CORRELATION_ID = 4242
CLIENT_ID = "groupcoord-\u00e9"

RENAMED = {"GenerationId": "GenerationIdOrMemberEpoch"}
"""kafka-python's older name of a field -> the jar's (TxnOffsetCommitRequest)."""

MUST_COVER = {
    "JoinGroup": range(0, 10),
    "SyncGroup": range(0, 6),
    "Heartbeat": range(0, 5),
    "LeaveGroup": range(0, 6),
    "OffsetCommit": range(2, 11),
    "OffsetFetch": range(1, 11),
    "FindCoordinator": range(0, 7),
    "ApiVersions": range(0, 5),
    "Metadata": range(0, 14),
    "DescribeGroups": range(0, 7),
    "ListGroups": range(0, 6),
    "DeleteGroups": range(0, 3),
    "CreateTopics": range(2, 8),
    "ListOffsets": range(1, 12),
}
"""The group and offset APIs the coordinator serves (and CreateTopics, ListOffsets), at every version both codecs
know: the comparison must reach each."""


def _subclasses(cls: type) -> Iterator[type]:
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        yield sub
        yield from _subclasses(sub)


def kafka_python_classes() -> dict[str, Any]:
    """kafka-python's primary (unversioned) message class of each request and response the jar also has."""
    assert admin and consumer and metadata and producer  # imported for their classes' registration
    return {
        cls.__name__: cls
        for cls in _subclasses(ApiMessage)
        if getattr(cls, "_class_version", 0) is None
        and getattr(cls, "_json", None) is not None
        and cls.__name__ in load_schemas()
    }


CLASSES = kafka_python_classes()


def shared_versions(name: str) -> range:
    """The versions both kafka-python's class and the jar's schema define."""
    valid = message_schema(name).valid_versions
    return range(valid.lowest, min(valid.highest, CLASSES[name].max_version) + 1)


def _our_key(kafka_python_name: str, value: Mapping[str, Any]) -> str | None:
    if kafka_python_name in value:
        return kafka_python_name
    if RENAMED.get(kafka_python_name) in value:
        return RENAMED[kafka_python_name]
    wanted = kafka_python_name.replace("_", "").lower()  # authorized_operations -> *AuthorizedOperations
    matches = [key for key in value if key.lower().endswith(wanted)]
    return matches[0] if len(matches) == 1 else None


def _bits(value: int) -> set[int] | None:
    bits = {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}
    return None if bits == {31} else bits  # kafka-python's null bitfield is bit 31 alone (-2147483648)


def _kafka_python_value(field: Any, value: Any) -> Any:
    if value is None:
        return None
    if field.is_struct_array():
        return [_kafka_python_struct(field, item) for item in value]
    if field.is_struct():
        return _kafka_python_struct(field, value)
    if field.type_str == "bitfield":
        return _bits(value)
    return value


def _kafka_python_fields(struct: Any, value: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for field in struct.fields.values():
        key = _our_key(field._name, value)
        if key is not None:  # a field the jar dropped with the versions that had it stays at its default
            fields[field.name] = _kafka_python_value(field, value[key])
    return fields


def _kafka_python_struct(field: Any, value: Mapping[str, Any]) -> Any:
    return field.data_class(**_kafka_python_fields(field, value))


def kafka_python_frame(name: str, version: int, value: Mapping[str, Any]) -> bytes:
    """kafka-python's encoding of ``value`` as message ``name`` at ``version``, with its header."""
    cls = CLASSES[name]
    message = cls[version](**_kafka_python_fields(cls._struct, value))
    if message_schema(name).kind == "request":
        message.with_header(correlation_id=CORRELATION_ID, client_id=CLIENT_ID)
    else:
        message.with_header(correlation_id=CORRELATION_ID)
    frame: bytes = message.encode(header=True)
    return frame


def first_difference(ours: bytes, theirs: bytes) -> str:
    """Where two frames first differ, with a few bytes of each from there."""
    offset = next((index for index, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), None)
    if offset is None:
        offset = min(len(ours), len(theirs))
    return (
        f"first differing byte at offset {offset} (ours {ours[offset : offset + 8].hex() or 'end'}, "
        f"kafka-python's {theirs[offset : offset + 8].hex() or 'end'}; lengths {len(ours)} and {len(theirs)})"
    )


def test_the_comparison_reaches_every_api_and_version_the_coordinator_needs() -> None:
    for api, versions in MUST_COVER.items():
        for kind in ("Request", "Response"):
            assert api + kind in CLASSES, f"kafka-python has no {api}{kind}"
            shared = shared_versions(api + kind)
            assert set(versions) <= set(shared), f"{api}{kind}: kafka-python and the jar share only {shared}"


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_frames_are_byte_for_byte_those_of_kafka_python(name: str) -> None:
    spec = message_schema(name)
    assert spec.api_key is not None
    for version in shared_versions(name):
        value = SampleValues(seed=version).message(spec, version)
        theirs = kafka_python_frame(name, version, value)
        if spec.kind == "request":
            ours = encode_request(spec.api_key, version, CORRELATION_ID, CLIENT_ID, value)
            header, body = decode_request(theirs)
            assert header["CorrelationId"] == CORRELATION_ID and header["ClientId"] == CLIENT_ID
        else:
            ours = encode_response(spec.api_key, version, CORRELATION_ID, value)
            header, body = decode_response(spec.api_key, version, theirs)
            assert header == {"CorrelationId": CORRELATION_ID}
        assert ours == theirs, f"{name} v{version}: {first_difference(ours, theirs)}"
        assert body == value, f"{name} v{version}: kafka-python's frame decodes to another value"
