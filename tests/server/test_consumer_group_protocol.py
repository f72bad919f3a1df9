"""The consumer group protocol (KIP-848) on the wire of a real host: ConsumerGroupHeartbeat and ConsumerGroupDescribe
frames encoded with Kafka's own message schemas, Metadata by topic id, and what a host without a target runner says.

The coordinator is a :class:`BackgroundCoordinator` over a state root with topic ``orders``, its consumer groups
assigned by the assignors' Python engine (:func:`groupcoord.assignment.runner.driver_assignment_runner`, no Spark).
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.metadata import ApiVersionsRequest

from groupcoord.assignment.runner import driver_assignment_runner
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.protocol.errors import Errors
from groupcoord.protocol.schemas import decode_response, encode_request
from groupcoord.server.api import BrokerAddress
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from tests.cli.conftest import fast_config
from tests.server.conftest import RawClient

pytestmark = [pytest.mark.integration]

TOPIC = "orders"
PARTITIONS = 4
GROUP = "wire-848"
HEARTBEAT = 68
DESCRIBE = 69
METADATA = 3


class SchemaClient:
    """A raw socket that sends request bodies (dicts of the schemas' field names) and decodes the answers."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.raw = RawClient(BrokerAddress(host, int(port)))
        self._correlation = 0

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the decoded response body."""
        self._correlation += 1
        payload = encode_request(api_key, version, self._correlation, "schema-client", body)
        self.raw.send_raw(struct.pack(">i", len(payload)) + payload)
        frame = self.raw.read_frame()
        assert frame is not None, "the server closed the connection"
        response_header, response = decode_response(api_key, version, frame)
        assert response_header["CorrelationId"] == self._correlation
        return response

    def heartbeat(self, member_id: str, epoch: int, **fields: Any) -> dict[str, Any]:
        """A ConsumerGroupHeartbeat v1 of ``member_id`` at ``epoch`` in :data:`GROUP`."""
        return self.call(HEARTBEAT, 1, {"GroupId": GROUP, "MemberId": member_id, "MemberEpoch": epoch, **fields})

    def close(self) -> None:
        """Close the socket."""
        self.raw.close()


def _join_fields() -> dict[str, Any]:
    return {"RebalanceTimeoutMs": 30_000, "SubscribedTopicNames": [TOPIC], "TopicPartitions": []}


@pytest.fixture
def root(tmp_path: Path) -> StateRoot:
    """A state root with topic ``orders`` of 4 partitions."""
    state = StateRoot.open(tmp_path / "state", create=True)
    TopicCatalog(state).create(TOPIC, PARTITIONS)
    return state


@pytest.fixture
def serving(root: StateRoot) -> Iterator[str]:
    """``HOST:PORT`` of a coordinator that assigns consumer groups (heartbeat interval 500 ms)."""
    config = fast_config(group_consumer_heartbeat_interval_ms=500, group_consumer_session_timeout_ms=10_000)
    with BackgroundCoordinator(root, config, listen="127.0.0.1:0",
                               target_assignment_runner=driver_assignment_runner(root).targets) as coordinator:
        assert coordinator.address is not None
        yield coordinator.address


@pytest.fixture
def client(serving: str) -> Iterator[SchemaClient]:
    """A :class:`SchemaClient` connected to ``serving``."""
    connected = SchemaClient(serving)
    yield connected
    connected.close()


def _assigned(response: dict[str, Any]) -> dict[uuid.UUID, list[int]] | None:
    assignment = response["Assignment"]
    if assignment is None:
        return None
    return {entry["TopicId"]: entry["Partitions"] for entry in assignment["TopicPartitions"]}


def _until_assigned(client: SchemaClient, member_id: str, epoch: int) -> dict[str, Any]:
    """Heartbeat (owning nothing) until the answer carries partitions; returns that answer."""
    deadline = time.monotonic() + 20
    while True:
        response = client.heartbeat(member_id, epoch, TopicPartitions=[])
        assert response["ErrorCode"] == 0, response
        if _assigned(response):
            return response
        assert time.monotonic() < deadline, f"no assignment in time: {response}"
        epoch = response["MemberEpoch"]
        time.sleep(0.1)


def test_api_versions_advertise_the_consumer_group_apis(serving: str) -> None:
    host, port = serving.rsplit(":", 1)
    client = RawClient(BrokerAddress(host, int(port)))
    try:
        response = client.request(ApiVersionsRequest(version=3, client_software_name="t",
                                                     client_software_version="1"))
    finally:
        client.close()
    ranges = {key.api_key: (key.min_version, key.max_version) for key in response.api_keys}
    assert ranges[HEARTBEAT] == (0, 1) and ranges[DESCRIBE] == (0, 1)


def test_a_member_joins_gets_every_partition_by_topic_id_and_metadata_names_it(client: SchemaClient,
                                                                               root: StateRoot) -> None:
    member_id = uuid.uuid4().hex[:22]
    first = client.heartbeat(member_id, 0, **_join_fields())
    assert first["ErrorCode"] == 0 and first["MemberId"] == member_id, first
    assert first["MemberEpoch"] >= 1 and first["HeartbeatIntervalMs"] == 500
    answer = first if _assigned(first) else _until_assigned(client, member_id, first["MemberEpoch"])
    topic_id = TopicCatalog(root).topic_ids()[TOPIC]
    assert _assigned(answer) == {topic_id: list(range(PARTITIONS))}

    metadata = client.call(METADATA, 12, {"Topics": [{"TopicId": topic_id, "Name": None},
                                                     {"TopicId": uuid.uuid4(), "Name": None}]})
    known, unknown = metadata["Topics"]
    assert (known["Name"], known["TopicId"], len(known["Partitions"])) == (TOPIC, topic_id, PARTITIONS)
    assert unknown["ErrorCode"] == Errors.UNKNOWN_TOPIC_ID.code and unknown["Name"] is None

    described = client.call(DESCRIBE, 1, {"GroupIds": [GROUP, "missing"], "IncludeAuthorizedOperations": False})
    group, missing = described["Groups"]
    assert (group["ErrorCode"], group["GroupState"], group["AssignorName"]) == (0, "Stable", "uniform")
    (member,) = group["Members"]
    assert member["MemberId"] == member_id and member["MemberType"] == 1
    assert member["TargetAssignment"]["TopicPartitions"] == [
        {"TopicId": topic_id, "TopicName": TOPIC, "Partitions": list(range(PARTITIONS))}]
    assert (missing["ErrorCode"], missing["ErrorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code, "Group missing not found.")

    left = client.heartbeat(member_id, -1)
    assert (left["ErrorCode"], left["MemberEpoch"]) == (0, -1)


def test_bad_heartbeats_get_kafkas_errors_and_change_nothing(client: SchemaClient) -> None:
    no_group = client.call(HEARTBEAT, 1, {"GroupId": "", "MemberId": "m" * 22, "MemberEpoch": 0,
                                          **_join_fields()})
    assert no_group["ErrorCode"] == Errors.INVALID_REQUEST.code and no_group["ErrorMessage"], no_group
    no_such_group = client.heartbeat("u" * 22, 5)
    assert (no_such_group["ErrorCode"], no_such_group["ErrorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code, f"Consumer group {GROUP} not found."), no_such_group
    assignor = client.heartbeat("a" * 22, 0, ServerAssignor="nope", **_join_fields())
    assert assignor["ErrorCode"] == Errors.UNSUPPORTED_ASSIGNOR.code, assignor
    described = client.call(DESCRIBE, 0, {"GroupIds": [GROUP], "IncludeAuthorizedOperations": False})
    assert described["Groups"][0]["ErrorCode"] == Errors.GROUP_ID_NOT_FOUND.code  # nothing was created

    joined = client.heartbeat("j" * 22, 0, **_join_fields())
    assert joined["ErrorCode"] == 0, joined
    unknown = client.heartbeat("u" * 22, joined["MemberEpoch"])
    assert unknown["ErrorCode"] == Errors.UNKNOWN_MEMBER_ID.code, unknown
    fenced = client.heartbeat("j" * 22, joined["MemberEpoch"] + 7)
    assert fenced["ErrorCode"] == Errors.FENCED_MEMBER_EPOCH.code, fenced


def test_a_frame_that_does_not_fit_the_schema_closes_the_connection(client: SchemaClient) -> None:
    payload = encode_request(HEARTBEAT, 1, 1, "x", {"GroupId": GROUP, "MemberId": "m", "MemberEpoch": 0})
    client.raw.send_raw(struct.pack(">i", len(payload) - 3) + payload[:-3])
    assert client.raw.read_frame() is None


def test_without_a_target_runner_consumer_group_heartbeats_are_not_served(root: StateRoot) -> None:
    with BackgroundCoordinator(root, fast_config(), listen="127.0.0.1:0") as coordinator:
        assert coordinator.address is not None
        host, port = coordinator.address.rsplit(":", 1)
        client = RawClient(BrokerAddress(host, int(port)))
        try:
            versions = client.request(ApiVersionsRequest(version=0))
            advertised = {key.api_key for key in versions.api_keys}
            assert HEARTBEAT not in advertised and DESCRIBE in advertised  # describing finds no consumer group
            payload = encode_request(HEARTBEAT, 1, 1, "x", {"GroupId": GROUP, "MemberId": "m" * 22,
                                                            "MemberEpoch": 0, **_join_fields()})
            client.send_raw(struct.pack(">i", len(payload)) + payload)
            assert client.read_frame() is None  # Kafka closes a connection that asks for an API it lacks
        finally:
            client.close()
