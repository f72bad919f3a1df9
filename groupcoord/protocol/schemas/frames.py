"""Whole request and response frames: a header, then the body (the 4-byte size prefix is the framing's, not ours).

Headers are schemas of the jar too (``RequestHeader.json``, ``ResponseHeader.json``), and Kafka's rule picks their
version from the API version (``ApiMessageType.requestHeaderVersion``): a request uses header v2 (tagged fields after
the client id) when its API version is flexible, v1 otherwise; a response uses header v1 (tagged fields after the
correlation id) when flexible, v0 otherwise, except ApiVersions responses, which always use v0 (KIP-511: a client
must read the answer to a version it sent before it knows what the broker speaks). The client id keeps its int16
length in both request header versions (its field's own ``flexibleVersions`` is ``none``).

Headers and bodies are dicts keyed by the schemas' field names: a request header holds ``RequestApiKey``,
``RequestApiVersion``, ``CorrelationId`` and ``ClientId``; a response header ``CorrelationId``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groupcoord.protocol.schemas.catalog import message_schema, schema_for
from groupcoord.protocol.schemas.codec import check_version, decode_prefix, encode
from groupcoord.protocol.schemas.errors import CodecError, FieldProblem
from groupcoord.protocol.schemas.primitives import INT16, Reader

REQUEST_HEADER = "RequestHeader"
"""The request header's schema name."""
RESPONSE_HEADER = "ResponseHeader"
"""The response header's schema name."""

API_VERSIONS_KEY = 18
"""ApiVersions: its responses always carry response header v0."""

Frame = bytes | bytearray | memoryview
"""A frame's payload (what follows the 4-byte size)."""


def request_header_version(api_key: int, api_version: int) -> int:
    """The RequestHeader version of a request of ``api_key`` at ``api_version``: 2 when flexible, else 1."""
    return 2 if api_version in schema_for(api_key, "request").flexible_versions else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """The ResponseHeader version of a response of ``api_key`` at ``api_version``: 1 when flexible, else 0 (and
    always 0 for ApiVersions)."""
    spec = schema_for(api_key, "response")
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if api_version in spec.flexible_versions else 0


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None, body: Mapping[str, Any]
) -> bytes:
    """A request frame's payload: the header for ``(api_key, version)``, then ``body`` encoded at ``version``."""
    spec = schema_for(api_key, "request")
    check_version(spec, version)
    header = {
        "RequestApiKey": api_key,
        "RequestApiVersion": version,
        "CorrelationId": correlation_id,
        "ClientId": client_id,
    }
    return encode(REQUEST_HEADER, request_header_version(api_key, version), header) + encode(spec, version, body)


def decode_request_header(frame: Frame) -> tuple[dict[str, Any], int]:
    """The request header at the start of ``frame``, and the offset where the body starts.

    This succeeds for any version of a known API, even one the schemas do not define (a server answers those with
    UNSUPPORTED_VERSION, and needs the correlation id to do so); an unknown API key is a :class:`CodecError`.
    """
    reader = Reader(frame)
    try:
        api_key = int(reader.fixed(INT16, "RequestApiKey"))
    except FieldProblem as problem:
        raise CodecError(REQUEST_HEADER, None, "RequestApiKey", problem.problem) from None
    try:
        api_version = int(reader.fixed(INT16, "RequestApiVersion"))
    except FieldProblem as problem:
        raise CodecError(REQUEST_HEADER, None, "RequestApiVersion", problem.problem) from None
    try:
        header_version = request_header_version(api_key, api_version)
    except CodecError:
        raise CodecError(
            REQUEST_HEADER, None, "RequestApiKey", f"unknown API key {api_key} (version {api_version})"
        ) from None
    return decode_prefix(REQUEST_HEADER, header_version, frame)


def decode_request(frame: Frame) -> tuple[dict[str, Any], dict[str, Any]]:
    """A request frame's payload as ``(header, body)``; a :class:`CodecError` for an unknown API, an unsupported
    version, or bytes that do not fit the schema."""
    header, offset = decode_request_header(frame)
    spec = schema_for(header["RequestApiKey"], "request")
    version = header["RequestApiVersion"]
    body, end = decode_prefix(spec, version, frame, offset)
    if end != len(frame):
        raise CodecError(spec.name, version, None, f"{len(frame) - end} bytes left after the message")
    return header, body


def encode_response(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """A response frame's payload: the header for ``(api_key, version)``, then ``body`` encoded at ``version``."""
    spec = schema_for(api_key, "response")
    check_version(spec, version)
    header = encode(RESPONSE_HEADER, response_header_version(api_key, version), {"CorrelationId": correlation_id})
    return header + encode(spec, version, body)


def decode_response(api_key: int, version: int, frame: Frame) -> tuple[dict[str, Any], dict[str, Any]]:
    """A response frame's payload as ``(header, body)``: the caller knows the API and version it asked with."""
    spec = schema_for(api_key, "response")
    check_version(spec, version)
    header, offset = decode_prefix(message_schema(RESPONSE_HEADER), response_header_version(api_key, version), frame)
    body, end = decode_prefix(spec, version, frame, offset)
    if end != len(frame):
        raise CodecError(spec.name, version, None, f"{len(frame) - end} bytes left after the message")
    return header, body
