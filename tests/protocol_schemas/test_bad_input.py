"""Bad input: each case is one :class:`CodecError`, one line naming the message, the version and the field.

Frames that are cut short, lengths that are negative but not -1, strings longer than what is left, unknown API keys
and unsupported versions on the decoding side; values that do not fit the schema on the encoding side.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from groupcoord.protocol.schemas import (
    CodecError,
    decode,
    decode_request,
    decode_request_header,
    decode_response,
    encode,
    encode_request,
    encode_response,
    message_schema,
)
from tests.protocol_schemas.values import SampleValues

JOIN_GROUP_V5 = {
    "GroupId": "group",
    "SessionTimeoutMs": 10_000,
    "RebalanceTimeoutMs": 30_000,
    "MemberId": "",
    "GroupInstanceId": None,
    "ProtocolType": "consumer",
    "Protocols": [{"Name": "range", "Metadata": b"abc"}, {"Name": "rr", "Metadata": b"0123456789"}],
}


def raised_by(call: Any, *args: Any) -> CodecError:
    """The CodecError that ``call(*args)`` raises, checked to be one line."""
    with pytest.raises(CodecError) as raised:
        call(*args)
    assert "\n" not in str(raised.value)
    return raised.value


def test_a_truncated_frame_names_the_field_it_cut() -> None:
    frame = encode_request(11, 5, 1, "c", JOIN_GROUP_V5)
    error = raised_by(decode_request, frame[:-3])
    assert (error.message, error.version, error.field) == ("JoinGroupRequest", 5, "Protocols[1].Metadata")
    assert "10 bytes, but only 7 bytes are left" in error.problem
    assert str(error).startswith("JoinGroupRequest v5 field Protocols[1].Metadata: ")


def test_every_prefix_of_a_frame_is_a_codec_error() -> None:
    for name, version in [("JoinGroupRequest", 5), ("JoinGroupRequest", 9), ("ConsumerGroupHeartbeatRequest", 1)]:
        spec = message_schema(name)
        assert spec.api_key is not None
        frame = encode_request(spec.api_key, version, 1, "c", SampleValues().message(spec, version))
        for end in range(len(frame)):
            raised_by(decode_request, frame[:end])


def test_a_truncated_fixed_size_field_says_so() -> None:
    error = raised_by(decode, "HeartbeatRequest", 0, bytes.fromhex("0001" + "67" + "0000"))
    assert (error.field, error.problem) == ("GenerationId", "int32 needs 4 bytes, only 2 left (truncated frame)")


def test_a_negative_string_length_other_than_minus_one_is_an_error() -> None:
    data = bytearray(encode("OffsetCommitRequest", 2, {"GroupId": "g", "Topics": []}))
    data[0:2] = struct.pack(">h", -2)
    error = raised_by(decode, "OffsetCommitRequest", 2, bytes(data))
    assert (error.message, error.version, error.field) == ("OffsetCommitRequest", 2, "GroupId")
    assert "negative string length -2" in error.problem


def test_a_negative_array_length_other_than_minus_one_is_an_error() -> None:
    data = bytearray(encode("OffsetCommitRequest", 2, {"GroupId": "g", "Topics": []}))
    data[-4:] = struct.pack(">i", -7)
    error = raised_by(decode, "OffsetCommitRequest", 2, bytes(data))
    assert error.field == "Topics" and "negative array length -7" in error.problem


def test_null_for_a_field_that_is_not_nullable_is_an_error() -> None:
    data = bytearray(encode("OffsetCommitRequest", 2, {"GroupId": "g", "Topics": []}))
    data[-4:] = struct.pack(">i", -1)
    error = raised_by(decode, "OffsetCommitRequest", 2, bytes(data))
    assert error.field == "Topics" and "not nullable at version 2" in error.problem


def test_a_string_longer_than_the_frame_is_an_error() -> None:
    error = raised_by(decode, "HeartbeatRequest", 0, struct.pack(">h", 100) + b"abc")
    assert (error.message, error.version, error.field) == ("HeartbeatRequest", 0, "GroupId")
    assert error.problem == "a string of 100 bytes, but only 3 bytes are left in the frame"


def test_a_compact_string_longer_than_the_frame_is_an_error() -> None:
    error = raised_by(decode, "HeartbeatRequest", 4, bytes.fromhex("65") + b"abc")
    assert (error.field, error.problem) == ("GroupId", "a string of 100 bytes, but only 3 bytes are left in the frame")


def test_an_array_longer_than_the_frame_is_an_error() -> None:
    data = bytearray(encode("OffsetCommitRequest", 2, {"GroupId": "g", "Topics": []}))
    data[-4:] = struct.pack(">i", 2**31 - 1)
    error = raised_by(decode, "OffsetCommitRequest", 2, bytes(data))
    assert error.field == "Topics" and "2147483647 elements, but only 0 bytes are left" in error.problem


def test_a_string_that_is_not_utf8_is_an_error() -> None:
    error = raised_by(decode, "HeartbeatRequest", 0, struct.pack(">h", 2) + b"\xff\xfe")
    assert error.field == "GroupId" and "not UTF-8" in error.problem


def test_a_varint_longer_than_five_bytes_is_an_error() -> None:
    error = raised_by(decode, "HeartbeatRequest", 4, b"\xff" * 6)
    assert error.field == "GroupId" and "longer than 5 bytes" in error.problem


def test_bytes_after_the_message_are_an_error() -> None:
    data = encode("HeartbeatRequest", 0, {"GroupId": "g", "GenerationId": 1, "MemberId": "m"})
    error = raised_by(decode, "HeartbeatRequest", 0, data + b"\x00")
    assert (error.field, error.problem) == (None, "1 bytes left after the message")


def test_an_unknown_api_key_is_an_error() -> None:
    frame = struct.pack(">hhih", 999, 0, 7, -1)
    error = raised_by(decode_request, frame)
    assert (error.message, error.field) == ("RequestHeader", "RequestApiKey")
    assert error.problem == "unknown API key 999 (version 0)"
    error = raised_by(encode_request, 999, 0, 7, None, {})
    assert "unknown API key" in error.problem
    raised_by(encode_response, -1, 0, 7, {})


def test_an_unsupported_version_is_an_error_but_its_header_still_reads() -> None:
    frame = struct.pack(">hhih", 11, 42, 7, 1) + b"c" + b"\x00" + b"\x00" * 20
    header, offset = decode_request_header(frame)
    assert (header["CorrelationId"], header["ClientId"], offset) == (7, "c", 12)
    error = raised_by(decode_request, frame)
    assert (error.message, error.version, error.field) == ("JoinGroupRequest", 42, None)
    assert error.problem == "unsupported version (valid versions: 0-9)"
    assert raised_by(encode_request, 11, 10, 7, "c", JOIN_GROUP_V5).version == 10
    assert raised_by(decode_response, 11, -1, b"").message == "JoinGroupResponse"
    assert raised_by(encode, "ControlledShutdownRequest", 0, {}).problem == "unsupported version (valid versions: none)"


def test_an_unknown_schema_name_is_an_error() -> None:
    assert raised_by(encode, "NoSuchRequest", 0, {}).problem.startswith("no schema of that name")


def test_a_non_default_value_in_a_field_absent_at_the_version_is_an_error() -> None:
    error = raised_by(encode, "JoinGroupRequest", 4, {**JOIN_GROUP_V5, "GroupInstanceId": "instance-1"})
    assert (error.version, error.field) == (4, "GroupInstanceId")
    assert "does not exist at version 4 (versions 5+) and is not ignorable" in error.problem


def test_an_ignorable_field_absent_at_the_version_is_dropped() -> None:
    without = encode("JoinGroupRequest", 7, JOIN_GROUP_V5)
    assert encode("JoinGroupRequest", 7, {**JOIN_GROUP_V5, "Reason": "restart"}) == without
    assert decode("JoinGroupRequest", 7, without)["Reason"] is None


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"SessionTimeoutMs": 2**31}, "SessionTimeoutMs", "2147483648 is out of range for int32"),
        ({"SessionTimeoutMs": "10"}, "SessionTimeoutMs", "an int32 must be an int, not str"),
        ({"SessionTimeoutMs": True}, "SessionTimeoutMs", "an int32 must be an int, not bool"),
        ({"GroupId": None}, "GroupId", "null, but the field is not nullable at version 5"),
        ({"GroupId": "x" * 40_000}, "GroupId", "a string of 40000 UTF-8 bytes is longer than Kafka's 32767"),
        ({"Protocols": "range"}, "Protocols", "an array must be a list, not str"),
        ({"Protocols": [{"Name": "r", "Metadata": "abc"}]}, "Protocols[0].Metadata", "bytes must be bytes, not str"),
        ({"Protocols": [{"Name": "r", "Metdata": b""}]}, "Protocols[0]", "Metdata: no such field in JoinGroupRequest"),
        ({"Protocols": [None]}, "Protocols[0]", "a JoinGroupRequestProtocol must be a dict, not NoneType"),
        ({"GroupID": "g"}, None, "GroupID: no such field in JoinGroupRequest"),
    ],
)
def test_a_value_that_does_not_fit_the_schema_is_an_error(
    change: dict[str, Any], field: str | None, problem: str
) -> None:
    error = raised_by(encode, "JoinGroupRequest", 5, {**JOIN_GROUP_V5, **change})
    assert (error.message, error.version, error.field) == ("JoinGroupRequest", 5, field)
    assert error.problem.startswith(problem), error.problem


def test_changed_bytes_give_a_value_or_a_codec_error_never_another_exception() -> None:
    chooser = random.Random(20261128)
    for name, version in [("JoinGroupRequest", 9), ("OffsetCommitRequest", 9), ("ConsumerGroupHeartbeatResponse", 1)]:
        spec = message_schema(name)
        data = encode(spec, version, SampleValues().message(spec, version))
        for _ in range(300):
            changed = bytearray(data)
            for _ in range(chooser.randint(1, 3)):
                changed[chooser.randrange(len(changed))] = chooser.randrange(256)
            try:
                decode(spec, version, bytes(changed))
            except CodecError as error:
                assert "\n" not in str(error)
