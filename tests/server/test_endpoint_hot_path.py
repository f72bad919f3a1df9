"""The endpoint's hot path: adapters awaited in the connection task, and the struct-read request header v1.

* ``stop()`` still turns an adapter that is mid-request into a NOT_COORDINATOR answer (it cancels the connection
  task while it is inside the adapter, not a per-request task);
* pipelined requests on one socket are answered in request order, one at a time;
* the fast header v1 reader agrees with kafka-python's schema reader on every input, garbage included;
* packed Heartbeat responses are byte for byte what kafka-python encodes.
"""

from __future__ import annotations

import asyncio
import io
import struct
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.consumer import HeartbeatRequest, HeartbeatResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext
from groupcoord.server.codec import MalformedFrame, decode_request, encode_response
from groupcoord.server.versions import ApiKey

from .conftest import RawClient, RunningEndpoint, decode_response


class ParkingHeartbeats:
    """A Heartbeat adapter whose requests wait for :attr:`release` (so a test can hold one mid-request)."""

    def __init__(self) -> None:
        self.release: asyncio.Event | None = None
        self.entered: list[str] = []

    async def handle(self, ctx: RequestContext) -> Any:
        """Record the member id, wait for the release, answer NONE."""
        self.entered.append(ctx.body.member_id)
        if self.release is None:
            self.release = asyncio.Event()
        await self.release.wait()
        return ctx.response(throttle_time_ms=0, error_code=Errors.NONE.code)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` as a Heartbeat response."""
        return ctx.response(throttle_time_ms=0, error_code=error.code)


def heartbeat(member_id: str, version: int = 4) -> Any:
    """A Heartbeat request of ``member_id`` in group ``g``."""
    return HeartbeatRequest(version=version, group_id="g", generation_id=1, member_id=member_id,
                            group_instance_id=None)


def test_stop_answers_a_request_inside_an_adapter_with_not_coordinator(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    adapter = ParkingHeartbeats()
    running = start_endpoint({ApiKey.HEARTBEAT: adapter})
    client = raw_client(running.address)
    request = heartbeat("m-1")
    client.send_raw(client.encode(request))
    running.call(_until(lambda: adapter.entered == ["m-1"]))
    running.call(running.endpoint.stop())
    payload = client.read_frame()
    assert payload is not None
    response = decode_response(request, payload)
    assert response.error_code == Errors.NOT_COORDINATOR.code
    assert client.closed_by_server()


def test_pipelined_requests_are_answered_in_order_one_at_a_time(
    start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    adapter = ParkingHeartbeats()
    running = start_endpoint({ApiKey.HEARTBEAT: adapter})
    client = raw_client(running.address)
    requests = [heartbeat(f"m-{i}", version=i % 5) for i in range(5)]
    client.send_raw(b"".join(client.encode(request, correlation_id=100 + i) for i, request in enumerate(requests)))
    running.call(_until(lambda: adapter.entered == ["m-0"]))
    running.call(asyncio.sleep(0.05))
    assert adapter.entered == ["m-0"], "the next request of a connection waits for the previous answer"
    running.call(_set(adapter))
    for i, request in enumerate(requests):
        payload = client.read_frame()
        assert payload is not None
        response = decode_response(request, payload)
        assert (response.header.correlation_id, response.error_code) == (100 + i, 0)
    assert adapter.entered == [f"m-{i}" for i in range(5)]


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.005)


async def _set(adapter: ParkingHeartbeats) -> None:
    assert adapter.release is not None
    adapter.release.set()


def _reference_header(payload: bytes) -> tuple[str | None, int] | None:
    stream = io.BytesIO(payload)
    try:
        header = RequestHeader.decode(stream, flexible=False)
    except Exception:
        return None
    return header.client_id, stream.tell()


@settings(max_examples=400, deadline=None)
@given(
    length=st.one_of(st.integers(-32768, 32767), st.integers(-2, 12)),
    tail=st.binary(max_size=16) | st.text(max_size=8).map(lambda s: s.encode()),
    truncate=st.booleans(),
)
def test_fast_header_v1_matches_kafka_python(length: int, tail: bytes, truncate: bool) -> None:
    prefix = struct.pack(">hhi", ApiKey.HEARTBEAT, 3, 42)
    payload = prefix + (b"\x01" if truncate else struct.pack(">h", length)) + tail
    expected = _reference_header(payload)
    try:
        request = decode_request(payload)
    except MalformedFrame:
        assert expected is None
        return
    except Exception:  # the header was read; the (garbage) body did not decode
        assert expected is not None
        return
    assert expected is not None
    assert request.header.client_id == expected[0]


def test_a_heartbeat_decodes_the_same_through_the_fast_header() -> None:
    request = heartbeat("member-\u00e9", version=3)
    request.with_header(correlation_id=7, client_id="client-\u00e9")
    payload = bytes(request.encode(header=True))
    decoded = decode_request(payload)
    assert (decoded.header.correlation_id, decoded.header.client_id) == (7, "client-\u00e9")
    assert decoded.body.member_id == "member-\u00e9"
    assert decoded.body.generation_id == 1


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(0, 4),
    error_code=st.integers(-32768, 32767),
    throttle_time_ms=st.integers(0, 2**31 - 1),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
)
def test_packed_heartbeat_responses_are_kafka_pythons_bytes(version: int, error_code: int, throttle_time_ms: int,
                                                           correlation_id: int) -> None:
    response = HeartbeatResponse(version=version, throttle_time_ms=throttle_time_ms, error_code=error_code)
    packed = encode_response(response, correlation_id=correlation_id)
    reference = HeartbeatResponse(version=version, throttle_time_ms=throttle_time_ms, error_code=error_code)
    reference.with_header(correlation_id=correlation_id)
    assert packed == bytes(reference.encode(header=True, framed=True))
