"""Regression: a -1 length in a non-nullable field is a malformed request, not a crash inside an adapter.

kafka-python decodes every -1 length as ``None``; before the decoder checked the schema's nullability, such a field
reached the adapters, which iterate it (``TypeError: 'NoneType' object is not iterable``): the connection got an
UNKNOWN_SERVER_ERROR answer built from the same broken request. Found by ``bench/fuzz.py``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.consumer import JoinGroupRequest, OffsetCommitRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from groupcoord.server.codec import MalformedRequest, decode_request
from groupcoord.server.versions import ApiKey
from tests.server.conftest import CoordinatorStack, RawClient


def _header(api_key: int, api_version: int) -> bytes:
    return struct.pack(">hhih", api_key, api_version, 5, 4) + b"fuzz"


NULL_ARRAY = struct.pack(">i", -1)
NULL_STRING = struct.pack(">h", -1)


@pytest.mark.parametrize(("payload", "field"), [
    (_header(ApiKey.LIST_OFFSETS, 1) + struct.pack(">i", -1) + NULL_ARRAY, "topics"),
    (_header(ApiKey.DESCRIBE_GROUPS, 0) + NULL_ARRAY, "groups"),
    (_header(ApiKey.OFFSET_COMMIT, 2) + struct.pack(">h", 1) + b"g" + struct.pack(">ih", -1, 0)
     + struct.pack(">q", -1) + NULL_ARRAY, "Topics"),
    (_header(ApiKey.HEARTBEAT, 0) + NULL_STRING + struct.pack(">i", 1) + struct.pack(">h", 1) + b"m", "group_id"),
], ids=["list-offsets-topics", "describe-groups-groups", "offset-commit-topics", "heartbeat-group-id"])
def test_null_in_a_non_nullable_field_is_a_malformed_request(payload: bytes, field: str) -> None:
    # kafka-python's APIs name the field after "null"; those served through Kafka's schemas before it.
    with pytest.raises(MalformedRequest, match=f"null {field}|{field}: null"):
        decode_request(payload)


def test_null_join_group_metadata_is_refused() -> None:
    request = JoinGroupRequest(version=5, group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                               member_id="", group_instance_id=None, protocol_type="consumer",
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])
    request.with_header(correlation_id=1, client_id="fuzz")
    payload = bytes(request.encode(header=True))
    # the empty metadata's length (0) is the last four bytes: make it -1 (null)
    with pytest.raises(MalformedRequest, match=r"null protocols\[\]\.metadata"):
        decode_request(payload[:-4] + NULL_ARRAY)


@pytest.mark.parametrize("request_", [
    MetadataRequest(version=1, topics=None),  # null topics: "all topics", nullable from v1
    FindCoordinatorRequest(version=3, key="g", key_type=0),
    OffsetCommitRequest(version=8, group_id="g", generation_id_or_member_epoch=-1, member_id="",
                        group_instance_id=None, topics=[]),  # group_instance_id is nullable
], ids=["metadata-all-topics", "find-coordinator", "offset-commit-null-instance"])
def test_nullable_fields_may_be_null(request_: Any) -> None:  # a kafka-python request (no type hints)
    request_.with_header(correlation_id=1, client_id=None)
    decoded = decode_request(bytes(request_.encode(header=True)))
    assert decoded.header.correlation_id == 1


@pytest.mark.integration
def test_null_topics_close_the_connection_and_others_are_served(
    coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]
) -> None:
    stack = coordinator_stack({"t1": 1})
    client = raw_client(stack.running.address)
    payload = _header(ApiKey.LIST_OFFSETS, 1) + struct.pack(">i", -1) + NULL_ARRAY
    client.send_raw(struct.pack(">i", len(payload)) + payload)
    assert client.closed_by_server()
    response = raw_client(stack.running.address).request(MetadataRequest(version=1, topics=None))
    assert [topic.name for topic in response.topics] == ["t1"]
    assert stack.persisted() == 0
