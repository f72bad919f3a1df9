"""Bad input on the wire: each case gets a Kafka error or a closed connection, and everyone else is still served."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from kafka.protocol.consumer import OffsetCommitRequest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest

from groupcoord.server.versions import SUPPORTED_VERSIONS, ApiKey
from tests.server.conftest import CoordinatorStack, RawClient, RunningEndpoint

pytestmark = pytest.mark.integration

UNSUPPORTED_VERSION = 35


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _header(api_key: int, api_version: int, correlation_id: int = 7) -> bytes:
    client_id = b"raw-test"
    return struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id


def _assert_still_serving(running: RunningEndpoint, raw_client: Callable[..., RawClient]) -> None:
    other = raw_client(running.address)
    response = other.request(MetadataRequest(version=1, topics=None))
    assert [topic.name for topic in response.topics] == ["t1"]


def test_truncated_frame_closes_the_connection_and_others_are_served(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    whole = client.encode(MetadataRequest(version=1, topics=None))
    client.send_raw(whole[: len(whole) - 3])
    client.sock.shutdown(1)  # the peer stops writing in the middle of the frame
    assert client.closed_by_server()
    _assert_still_serving(running, raw_client)


def test_truncated_size_prefix_closes_the_connection(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    client.send_raw(b"\x00\x00")
    client.sock.shutdown(1)
    assert client.closed_by_server()
    _assert_still_serving(running, raw_client)


def test_malformed_body_closes_the_connection_and_others_are_served(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    # Metadata v1: a topic array claiming a million entries, followed by nothing.
    client.send_raw(_frame(_header(ApiKey.METADATA, 1) + struct.pack(">i", 1_000_000)))
    assert client.closed_by_server()
    _assert_still_serving(running, raw_client)


def test_frame_shorter_than_a_header_closes_the_connection(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    client.send_raw(_frame(b"\x00\x03\x00"))
    assert client.closed_by_server()
    _assert_still_serving(running, raw_client)


def test_garbled_client_id_closes_the_connection(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    # The client id claims 300 bytes, the frame ends after 2.
    client.send_raw(_frame(struct.pack(">hhih", ApiKey.METADATA, 1, 9, 300) + b"ab"))
    assert client.closed_by_server()
    _assert_still_serving(running, raw_client)


def test_oversized_frame_is_refused_before_its_body_is_read(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint(max_request_bytes=1024)
    client = raw_client(running.address)
    client.send_raw(struct.pack(">i", 1025))  # announce one byte too many, send no body at all
    assert client.closed_by_server()
    _assert_still_serving(running, raw_client)


def test_frame_at_the_size_limit_is_served(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint(max_request_bytes=1024)
    client = raw_client(running.address)
    request = MetadataRequest(version=1, topics=[MetadataRequest.MetadataRequestTopic(name="x" * 990)])
    frame = client.encode(request)
    assert len(frame) - 4 <= 1024
    client.send_raw(frame)
    payload = client.read_frame()
    assert payload is not None


def test_negative_frame_size_closes_the_connection(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    client.send_raw(struct.pack(">i", -5))
    assert client.closed_by_server()
    _assert_still_serving(running, raw_client)


@pytest.mark.parametrize(("api_key", "api_version"), [(999, 0), (ApiKey.METADATA, 99), (0, 3)], ids=[
    "unknown-key", "unknown-version", "unserved-produce"
])
def test_unknown_api_key_or_version_closes_the_connection(
    start_endpoint: Callable[..., RunningEndpoint],
    raw_client: Callable[..., RawClient],
    api_key: int,
    api_version: int,
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    client.send_raw(_frame(_header(api_key, api_version)))
    assert client.closed_by_server()
    _assert_still_serving(running, raw_client)


def test_api_versions_at_an_unknown_version_gets_v0_unsupported_version_with_our_ranges(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    # A future ApiVersions v9 with a flexible (v2) header: only the fixed prefix matters to the server.
    client.send_raw(_frame(_header(ApiKey.API_VERSIONS, 9, correlation_id=41) + b"\x00garbage-body"))
    payload = client.read_frame()
    assert payload is not None
    response = ApiVersionsResponse.decode(payload, header=True)
    assert response.header.correlation_id == 41
    assert response.error_code == UNSUPPORTED_VERSION
    ranges = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
    supported = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
    assert ranges[ApiKey.API_VERSIONS] == (supported.min_version, supported.max_version)
    assert ApiKey.METADATA in ranges
    # The connection stays usable: the client retries at a version we speak.
    retried = client.request(ApiVersionsRequest(version=supported.max_version, client_software_name="raw",
                                                client_software_version="1"))
    assert retried.error_code == 0


def test_api_versions_with_invalid_client_software_name_gets_invalid_request(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    running = start_endpoint()
    client = raw_client(running.address)
    response = client.request(
        ApiVersionsRequest(version=3, client_software_name="-bad name-", client_software_version="1")
    )
    assert response.error_code == 42


def test_rejected_frames_never_reach_the_coordinator_and_nothing_is_written(
    coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]
) -> None:
    stack = coordinator_stack({"t1": 1})
    commit = OffsetCommitRequest(version=8, group_id="g", generation_id_or_member_epoch=-1, member_id="",
                                 group_instance_id=None, topics=[
                                     OffsetCommitRequest.OffsetCommitRequestTopic(name="t1", partitions=[
                                         OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                             partition_index=0, committed_offset=42, committed_leader_epoch=-1,
                                             committed_metadata="")])])
    whole = raw_client(stack.running.address).encode(commit)
    bad_inputs = [
        whole[:-6],  # the frame size still claims the full length: the body is cut short
        whole[:4] + whole[4:12] + b"\xff" * (len(whole) - 12),  # header kept, body garbled
        _frame(_header(ApiKey.OFFSET_COMMIT, 10) + whole[14:]),  # unadvertised version
    ]
    for data in bad_inputs:
        client = raw_client(stack.running.address)
        client.send_raw(data)
        client.sock.shutdown(1)
        assert client.closed_by_server()
    assert stack.persisted() == 0
    response = raw_client(stack.running.address).request(commit)
    assert response.topics[0].partitions[0].error_code == 0
    assert stack.persisted() == 1
