"""The Heartbeat fast path (groupcoord.server.heartbeat_decode) agrees with kafka-python's generic codec."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer import HeartbeatRequest

from groupcoord.server.codec import DecodedRequest, RequestRejected, decode_request
from groupcoord.server.heartbeat_decode import FLEXIBLE_FROM, INSTANCE_ID_FROM, HeartbeatBody

names = st.text(max_size=140)  # past 126 UTF-8 bytes a v4 compact length needs two varint bytes: the generic path


def _frame(version: int, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
           client_id: str | None, correlation_id: int) -> bytes:
    extra = {"group_instance_id": instance_id} if version >= INSTANCE_ID_FROM else {}
    request = HeartbeatRequest(version=version, group_id=group_id, generation_id=generation_id, member_id=member_id,
                               **extra)
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True))


def _seen(decoded: DecodedRequest) -> tuple[Any, ...]:
    """What an adapter can read of a decoded Heartbeat (a damaged API key can make it another request)."""
    body = decoded.body
    if decoded.header.api_key != HeartbeatRequest.API_KEY:
        return decoded.header, type(body).__name__, repr(body)
    instance = body.group_instance_id if decoded.api_version >= INSTANCE_ID_FROM else None
    return decoded.header, body.group_id, body.generation_id, body.member_id, instance


def _outcome(payload: bytes, *, fast_paths: bool) -> tuple[Any, ...]:
    try:
        return ("ok", *_seen(decode_request(payload, fast_paths=fast_paths)))
    except RequestRejected as exc:
        return ("rejected", type(exc).__name__, str(exc))


@settings(max_examples=500, deadline=None)
@given(version=st.integers(0, 4), group_id=names, generation_id=st.integers(-(2**31), 2**31 - 1),
       member_id=names, instance_id=st.none() | names, client_id=st.none() | st.text(max_size=20),
       correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_every_version_decodes_the_same_through_the_fast_path(
        version: int, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
        client_id: str | None, correlation_id: int) -> None:
    payload = _frame(version, group_id, generation_id, member_id, instance_id, client_id, correlation_id)
    fast = decode_request(payload)
    assert _seen(fast) == _seen(decode_request(payload, fast_paths=False))
    strings = (group_id, member_id, instance_id or "") if version >= INSTANCE_ID_FROM else (group_id, member_id)
    one_byte_lengths = all(len(s.encode()) < 127 for s in strings)
    # The fast path really answered wherever it should (the property would hold vacuously otherwise).
    assert isinstance(fast.body, HeartbeatBody) == (version < FLEXIBLE_FROM or one_byte_lengths)


@settings(max_examples=1500, deadline=None)
@given(version=st.integers(0, 4), member_id=st.text(max_size=10), instance_id=st.none() | st.text(max_size=10),
       cut=st.integers(0, 60), flip_at=st.integers(0, 60), flip_to=st.integers(0, 255),
       tail=st.binary(max_size=3))
@example(version=4, member_id="m", instance_id=None, cut=0, flip_at=60, flip_to=0, tail=b"\x01\x00\x00")  # tags
@example(version=0, member_id="m", instance_id=None, cut=0, flip_at=10, flip_to=0xFF, tail=b"")  # null lengths
@example(version=0, member_id="", instance_id=None, cut=0, flip_at=1, flip_to=10, tail=b"")  # now FindCoordinator
def test_damaged_frames_are_accepted_or_rejected_alike(
        version: int, member_id: str, instance_id: str | None, cut: int, flip_at: int, flip_to: int,
        tail: bytes) -> None:
    payload = bytearray(_frame(version, "group", 3, member_id, instance_id, "client", 9))
    if cut:
        del payload[-min(cut, len(payload) - 8):]
    if flip_at < len(payload):
        payload[flip_at] = flip_to
    damaged = bytes(payload) + tail
    assert _outcome(damaged, fast_paths=True) == _outcome(damaged, fast_paths=False)


def test_a_null_group_id_is_still_refused_by_name() -> None:
    payload = bytearray(_frame(3, "g", 1, "m", None, "c", 1))
    group_id_length_at = 8 + 2 + len("c")  # header prefix, client id length, client id
    payload[group_id_length_at:group_id_length_at + 2] = b"\xff\xff"
    del payload[group_id_length_at + 2]  # the one byte of "g"
    fast = _outcome(bytes(payload), fast_paths=True)
    assert fast == _outcome(bytes(payload), fast_paths=False)
    assert fast[:2] == ("rejected", "MalformedRequest") and "null group_id" in fast[2]
