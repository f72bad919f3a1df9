"""DescribeTopicPartitions (KIP-966) over the wire: every partition led by node 0, pages of at most the asked limit with
a cursor to the next one, unknown topics with UNKNOWN_TOPIC_OR_PARTITION and the zero id."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from groupcoord.protocol.errors import Errors
from groupcoord.protocol.schemas import decode_response, encode_request
from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.server.topics import StaticTopics
from tests.server.conftest import RawClient, RunningEndpoint

DESCRIBE_TOPIC_PARTITIONS = 75
TOPICS = StaticTopics({"alpha": 3, "beta": 2, "gamma": 1})


def _describe(client: RawClient, body: dict[str, Any]) -> dict[str, Any]:
    payload = encode_request(DESCRIBE_TOPIC_PARTITIONS, 0, 7, "t", body)
    client.send_raw(struct.pack(">i", len(payload)) + payload)
    frame = client.read_frame()
    assert frame is not None
    _, response = decode_response(DESCRIBE_TOPIC_PARTITIONS, 0, frame)
    return response


def _page(response: dict[str, Any]) -> list[tuple[str, int]]:
    return [(t["Name"], p["PartitionIndex"]) for t in response["Topics"] for p in t["Partitions"]]


def test_pages_of_partitions_follow_the_cursor_to_the_end(start_endpoint: Callable[..., RunningEndpoint],
                                                          raw_client: Callable[..., RawClient]) -> None:
    address = start_endpoint(build_dispatcher(topics=TOPICS)).address
    client = raw_client(address)
    seen: list[tuple[str, int]] = []
    cursor = None
    for _ in range(10):
        response = _describe(client, {"Topics": [], "ResponsePartitionLimit": 2, "Cursor": cursor})
        assert len(_page(response)) <= 2
        seen += _page(response)
        cursor = response["NextCursor"]
        if cursor is None:
            break
    assert seen == [("alpha", 0), ("alpha", 1), ("alpha", 2), ("beta", 0), ("beta", 1), ("gamma", 0)]
    first = _describe(client, {"Topics": [{"Name": "beta"}], "ResponsePartitionLimit": 2000, "Cursor": None})
    (topic,) = first["Topics"]
    assert topic["TopicId"] == TOPICS.topic_ids()["beta"] and first["NextCursor"] is None
    assert [(p["LeaderId"], p["ReplicaNodes"], p["IsrNodes"], p["EligibleLeaderReplicas"])
            for p in topic["Partitions"]] == [(address.node_id, [address.node_id], [address.node_id], [])] * 2


def test_an_unknown_topic_gets_its_error_and_the_zero_id(start_endpoint: Callable[..., RunningEndpoint],
                                                         raw_client: Callable[..., RawClient]) -> None:
    client = raw_client(start_endpoint(build_dispatcher(topics=TOPICS)).address)
    response = _describe(client, {"Topics": [{"Name": "nope"}, {"Name": "gamma"}], "ResponsePartitionLimit": 10,
                                  "Cursor": None})
    gamma, nope = response["Topics"]  # sorted by name, as Kafka answers
    assert (gamma["Name"], nope["Name"]) == ("gamma", "nope")
    assert nope["ErrorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code and nope["TopicId"] == uuid.UUID(int=0)
    assert nope["Partitions"] == [] and gamma["ErrorCode"] == 0
