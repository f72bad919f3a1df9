"""Hypothesis against the request decoder and dispatcher (in-process, over a real core and an in-memory log).

Every example goes through :class:`bench.fuzz_target.FuzzTarget`, which raises on a broken promise: an untyped
exception from framing or decoding, an adapter exception, a response that does not decode back, or a record
written for a rejected or all-error request. The tests add what each input class must end in. (Records the core's
timers write before an input, such as a consumer member's session expiring, are not the input's.)
"""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz import Mutator
from bench.fuzz_target import MAX_REQUEST_BYTES, FuzzTarget
from groupcoord.protocol.schemas import request_header_version
from groupcoord.server.versions import SUPPORTED_VERSIONS, ApiKey

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def header_length(frame: bytes) -> int:
    """Bytes of the request header (after the size prefix) in one of the seed frames."""
    client_id_length: int
    api_key, api_version, _, client_id_length = struct.unpack_from(">hhih", frame, 4)
    flexible = request_header_version(api_key, api_version) == 2
    return 10 + client_id_length + (1 if flexible else 0)


def framed(payload: bytes) -> bytes:
    """``payload`` behind an honest size prefix."""
    return struct.pack(">i", len(payload)) + payload


@FUZZ
@given(data=st.binary(max_size=256))
def test_random_streams_write_nothing_unless_a_request_was_answered(fuzz_target: FuzzTarget, data: bytes) -> None:
    result = fuzz_target.feed(data)
    if result.answered == 0 and not result.parked:
        assert result.records_written == 0
    if len(data) < 4:
        assert result.reason in ("end of stream", "TruncatedFrame")


@FUZZ
@given(payload=st.binary(max_size=256))
def test_random_payloads_in_honest_frames_are_answered_or_closed(fuzz_target: FuzzTarget, payload: bytes) -> None:
    result = fuzz_target.feed(framed(payload))
    if result.closed:
        assert result.records_written == 0
    else:
        assert result.answered + result.parked == 1


@FUZZ
@given(pick=st.integers(min_value=0), body=st.binary(max_size=128))
def test_valid_headers_with_corrupt_bodies_write_nothing_when_rejected(
    fuzz_target: FuzzTarget, seeds: list[bytes], pick: int, body: bytes
) -> None:
    seed = seeds[pick % len(seeds)]
    result = fuzz_target.feed(framed(seed[4:4 + header_length(seed)] + body))
    if result.closed:
        assert result.reason == "MalformedRequest"
        assert result.records_written == 0


@FUZZ
@given(pick=st.integers(min_value=0), version=st.integers(min_value=-(2**15), max_value=2**15 - 1))
def test_unadvertised_versions_close_the_connection_except_api_versions(
    fuzz_target: FuzzTarget, seeds: list[bytes], pick: int, version: int
) -> None:
    seed = bytearray(seeds[pick % len(seeds)])
    api_key = ApiKey(struct.unpack_from(">h", seed, 4)[0])
    struct.pack_into(">h", seed, 6, version)
    result = fuzz_target.feed(bytes(seed))
    if version in SUPPORTED_VERSIONS[api_key]:
        return  # an advertised version reading another version's body: answered or MalformedRequest
    assert result.records_written == 0
    if api_key == ApiKey.API_VERSIONS:
        assert result.answered == 1 and not result.closed, "ApiVersions gets a v0 UNSUPPORTED_VERSION answer"
    else:
        assert result.closed and result.reason == "UnsupportedApi"


@FUZZ
@given(pick=st.integers(min_value=0), keep=st.integers(min_value=0, max_value=10_000))
def test_truncated_frames_close_the_connection_and_write_nothing(
    fuzz_target: FuzzTarget, seeds: list[bytes], pick: int, keep: int
) -> None:
    seed = seeds[pick % len(seeds)]
    cut = seed[: 1 + keep % (len(seed) - 1)]  # the size prefix still announces the whole frame
    result = fuzz_target.feed(cut)
    assert result.closed and result.reason == "TruncatedFrame"
    assert result.records_written == 0


@FUZZ
@given(size=st.one_of(st.integers(min_value=MAX_REQUEST_BYTES + 1, max_value=2**31 - 1),
                      st.integers(min_value=-(2**31), max_value=-1)),
       tail=st.binary(max_size=64))
def test_oversized_and_negative_frame_sizes_close_before_the_body_is_read(
    fuzz_target: FuzzTarget, size: int, tail: bytes
) -> None:
    result = fuzz_target.feed(struct.pack(">i", size) + tail)
    assert result.closed
    assert result.reason == ("FrameTooLarge" if size > 0 else "MalformedFrame")


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(min_value=0, max_value=2**40))
def test_mutated_valid_frames_never_break_the_target(fuzz_target: FuzzTarget, seeds: list[bytes], index: int
                                                     ) -> None:
    fuzz_target.feed(Mutator(7, seeds).input(index))


def test_a_pipeline_of_valid_frames_is_answered_in_full(fuzz_target: FuzzTarget, seeds: list[bytes]) -> None:
    without_joins = [s for s in seeds if struct.unpack_from(">h", s, 4)[0] != ApiKey.JOIN_GROUP]
    result = fuzz_target.feed(b"".join(without_joins))
    assert not result.closed
    assert result.answered == len(without_joins)


def test_a_bad_frame_after_good_ones_closes_only_at_the_bad_one(fuzz_target: FuzzTarget, seeds: list[bytes]) -> None:
    metadata = next(s for s in seeds if struct.unpack_from(">h", s, 4)[0] == ApiKey.METADATA)
    result = fuzz_target.feed(metadata + metadata + framed(b"\x00\x03\x00"))
    assert result.answered == 2
    assert result.closed and result.reason == "MalformedFrame"
