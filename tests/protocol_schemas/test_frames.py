"""Whole frames: Kafka's rule for the header versions, and byte layouts written out by hand, including the KIP-848
ConsumerGroupHeartbeat messages that kafka-python has no classes for."""

from __future__ import annotations

import uuid

import pytest

from groupcoord.protocol.schemas import (
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)


@pytest.mark.parametrize(
    ("api_key", "version", "request_header", "response_header"),
    [
        (11, 5, 1, 0),  # JoinGroup: flexible from v6
        (11, 6, 2, 1),
        (12, 3, 1, 0),  # Heartbeat: flexible from v4
        (12, 4, 2, 1),
        (18, 2, 1, 0),  # ApiVersions: flexible requests from v3, but its responses always carry header v0
        (18, 3, 2, 0),
        (18, 4, 2, 0),
        (68, 0, 2, 1),  # ConsumerGroupHeartbeat: flexible from v0
        (69, 1, 2, 1),  # ConsumerGroupDescribe
    ],
)
def test_header_versions_follow_kafkas_rule(
    api_key: int, version: int, request_header: int, response_header: int
) -> None:
    assert request_header_version(api_key, version) == request_header
    assert response_header_version(api_key, version) == response_header


HEARTBEAT = {"GroupId": "g", "GenerationId": 3, "MemberId": "m", "GroupInstanceId": None}


def test_a_flexible_request_header_has_tagged_fields_but_an_int16_client_id() -> None:
    frame = encode_request(12, 4, 7, "cli", HEARTBEAT)
    header = "000c" + "0004" + "00000007" + "0003" + "636c69" + "00"
    body = "0267" + "00000003" + "026d" + "00" + "00"
    assert frame == bytes.fromhex(header + body)
    assert decode_request(frame) == (
        {"RequestApiKey": 12, "RequestApiVersion": 4, "CorrelationId": 7, "ClientId": "cli"},
        HEARTBEAT,
    )
    assert decode_request_header(frame)[1] == len(bytes.fromhex(header))


def test_a_null_client_id_is_length_minus_one() -> None:
    frame = encode_request(12, 0, 7, None, {"GroupId": "g", "GenerationId": 3, "MemberId": "m"})
    assert frame == bytes.fromhex("000c" + "0000" + "00000007" + "ffff" + "00016700000003" + "00016d")
    assert decode_request(frame)[0]["ClientId"] is None


def test_an_api_versions_response_has_header_v0_at_a_flexible_version() -> None:
    body = {"ErrorCode": 35, "ApiKeys": [], "ThrottleTimeMs": 0}
    frame = encode_response(18, 3, 5, body)
    assert frame == bytes.fromhex("00000005" + "0023" + "01" + "00000000" + "00")
    header, decoded = decode_response(18, 3, frame)
    assert header == {"CorrelationId": 5} and decoded["ErrorCode"] == 35


def test_a_consumer_group_heartbeat_request_is_laid_out_as_kip_848_says() -> None:
    body = {
        "GroupId": "g",
        "MemberId": "m",
        "MemberEpoch": 0,
        "InstanceId": None,
        "RackId": None,
        "RebalanceTimeoutMs": 300_000,
        "SubscribedTopicNames": ["t"],
        "SubscribedTopicRegex": None,
        "ServerAssignor": "uniform",
        "TopicPartitions": [],
    }
    frame = encode_request(68, 1, 9, "c", body)
    header = "0044" + "0001" + "00000009" + "0001" + "63" + "00"
    fields = (
        "0267" + "026d" + "00000000" + "00" + "00" + "000493e0" + "02" + "0274" + "00" + "08" + b"uniform".hex() + "01"
    )
    assert frame == bytes.fromhex(header + fields + "00")
    assert decode_request(frame)[1] == body


def test_a_consumer_group_heartbeat_response_marks_its_nullable_assignment_with_an_int8() -> None:
    topic = uuid.UUID("00000000-0000-0001-0000-000000000002")
    body = {
        "ThrottleTimeMs": 0,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "MemberId": "m",
        "MemberEpoch": 5,
        "HeartbeatIntervalMs": 5000,
        "Assignment": {"TopicPartitions": [{"TopicId": topic, "Partitions": [0, 2]}]},
    }
    frame = encode_response(68, 0, 9, body)
    assignment = "01" + "02" + topic.hex + "03" + "00000000" + "00000002" + "00" + "00"
    fields = "00000000" + "0000" + "00" + "026d" + "00000005" + "00001388"
    assert frame == bytes.fromhex("00000009" + "00" + fields + assignment + "00")
    assert decode_response(68, 0, frame) == ({"CorrelationId": 9}, body)
    no_assignment = encode_response(68, 0, 9, {**body, "Assignment": None})
    assert no_assignment == bytes.fromhex("00000009" + "00" + fields + "ff" + "00")
    assert decode_response(68, 0, no_assignment)[1]["Assignment"] is None
