"""Request decoding and response encoding with kafka-python's schema-generated protocol classes.

A request frame's payload is a request header (v1, or v2 with tagged fields when the API version is flexible)
followed by the body. A response is a response header (v0, or v1 when the response version is flexible; ApiVersions
always uses v0) followed by the body. kafka-python's classes know every schema; this module only picks the class
for ``(api_key, api_version)`` and turns failures into typed rejections the endpoint can act on.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kafka.protocol.admin import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse

from groupcoord.server.heartbeat_decode import FLEXIBLE_FROM, read_heartbeat_body, skip_empty_tag_section
from groupcoord.server.schema_apis import (
    SCHEMA_API_KEYS,
    CodecError,
    SchemaResponse,
    SchemaResponseClass,
    decode_schema_body,
)
from groupcoord.server.versions import SUPPORTED_VERSIONS, ApiKey, VersionRange, supported_range

# (request class, response class) per served API.
SCHEMAS: Mapping[ApiKey, tuple[Any, Any]] = {
    ApiKey.PRODUCE: (ProduceRequest, ProduceResponse),
    ApiKey.FETCH: (FetchRequest, FetchResponse),
    ApiKey.LIST_OFFSETS: (ListOffsetsRequest, ListOffsetsResponse),
    ApiKey.METADATA: (MetadataRequest, MetadataResponse),
    ApiKey.OFFSET_COMMIT: (OffsetCommitRequest, OffsetCommitResponse),
    ApiKey.OFFSET_FETCH: (OffsetFetchRequest, OffsetFetchResponse),
    ApiKey.FIND_COORDINATOR: (FindCoordinatorRequest, FindCoordinatorResponse),
    ApiKey.JOIN_GROUP: (JoinGroupRequest, JoinGroupResponse),
    ApiKey.HEARTBEAT: (HeartbeatRequest, HeartbeatResponse),
    ApiKey.LEAVE_GROUP: (LeaveGroupRequest, LeaveGroupResponse),
    ApiKey.SYNC_GROUP: (SyncGroupRequest, SyncGroupResponse),
    ApiKey.DESCRIBE_GROUPS: (DescribeGroupsRequest, DescribeGroupsResponse),
    ApiKey.LIST_GROUPS: (ListGroupsRequest, ListGroupsResponse),
    ApiKey.API_VERSIONS: (ApiVersionsRequest, ApiVersionsResponse),
    ApiKey.OFFSET_DELETE: (OffsetDeleteRequest, OffsetDeleteResponse),
    ApiKey.INIT_PRODUCER_ID: (InitProducerIdRequest, InitProducerIdResponse),
}

_HEADER_PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id: identical in every header version
_INT16 = struct.Struct(">h")
_API_KEYS: Mapping[int, ApiKey] = {key.value: key for key in ApiKey}  # a dict lookup; ApiKey(n) costs 10 times more
_HEARTBEAT = ApiKey.HEARTBEAT.value

# Heartbeat responses, framed: size, correlation id, then v0 error code; v1-v3 throttle time and error code;
# v4 (flexible) an empty tag section after the header and after the body.
_HEARTBEAT_V0 = struct.Struct(">iih")
_HEARTBEAT_V1 = struct.Struct(">iiih")
_HEARTBEAT_V4 = struct.Struct(">iiBihB")


class RequestRejected(Exception):
    """A request frame this endpoint will not process; subclasses say why."""


class CloseConnection(RequestRejected):
    """An adapter asks to close the connection instead of answering (an acks-0 Produce that was refused)."""


class MalformedFrame(RequestRejected):
    """Not even the request header could be read: the connection is closed."""


@dataclass(frozen=True)
class RequestHeaderInfo:
    """The parts of a request header the endpoint uses."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


class UnsupportedApi(RequestRejected):
    """The header names an API key or version that is not advertised."""

    def __init__(self, header: RequestHeaderInfo) -> None:
        super().__init__(f"unsupported api key {header.api_key} version {header.api_version}")
        self.header = header


class MalformedRequest(RequestRejected):
    """The header was read but the body does not decode at its version."""

    def __init__(self, header: RequestHeaderInfo, reason: str) -> None:
        super().__init__(f"malformed body for api key {header.api_key} v{header.api_version}: {reason}")
        self.header = header


@dataclass(frozen=True)
class DecodedRequest:
    """A decoded request: its header and the kafka-python request object (``body``)."""

    header: RequestHeaderInfo
    body: Any

    @property
    def api_key(self) -> ApiKey:
        """The request's API key."""
        return _API_KEYS[self.header.api_key]

    @property
    def api_version(self) -> int:
        """The request's API version."""
        return self.header.api_version


def decode_request(payload: bytes, *, ranges: Mapping[ApiKey, VersionRange] = SUPPORTED_VERSIONS,
                   fast_paths: bool = True) -> DecodedRequest:
    """Decode one request frame payload (everything after the 4-byte size).

    Raises :class:`MalformedFrame` when the header cannot be read, :class:`UnsupportedApi` for an API key or version
    outside ``ranges`` and :class:`MalformedRequest` when the body does not decode. A usual Heartbeat is read by
    :mod:`groupcoord.server.heartbeat_decode` (its body is then a ``HeartbeatBody``, not kafka-python's object);
    ``fast_paths=False`` forces the generic codec (tests compare the two).
    """
    if len(payload) < _HEADER_PREFIX.size:
        raise MalformedFrame(f"request of {len(payload)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _HEADER_PREFIX.unpack_from(payload)
    advertised = supported_range(api_key, ranges)
    if advertised is None or api_version not in advertised:
        raise UnsupportedApi(RequestHeaderInfo(api_key, api_version, correlation_id, None))
    if api_key in SCHEMA_API_KEYS:
        return _decode_schema_request(payload, api_key, api_version, correlation_id)
    if api_key == _HEARTBEAT and fast_paths:
        fast = _decode_heartbeat(payload, api_version, correlation_id)
        if fast is not None:
            return fast
    request_class = SCHEMAS[_API_KEYS[api_key]][0]
    if request_class.flexible_version_q(api_version):
        client_id, body_offset = _decode_flexible_header(payload)
    else:
        client_id, body_offset = _decode_header_v1(payload)
    header = RequestHeaderInfo(api_key, api_version, correlation_id, client_id)
    try:
        body = request_class.decode(payload[body_offset:], version=api_version)
    except Exception as exc:
        raise MalformedRequest(header, repr(exc)) from None
    null_field = _first_null_field(_null_checks(request_class._struct, api_version), body)
    if null_field is not None:
        raise MalformedRequest(header, f"null {null_field} (the field is not nullable at this version)")
    return DecodedRequest(header, body)


def _decode_schema_request(payload: bytes, api_key: int, api_version: int, correlation_id: int) -> DecodedRequest:
    """A request of an API served through Kafka's schemas: its body is the schema codec's dict."""
    try:
        client_id, body = decode_schema_body(payload)
    except CodecError as exc:
        raise MalformedRequest(RequestHeaderInfo(api_key, api_version, correlation_id, None), str(exc)) from None
    return DecodedRequest(RequestHeaderInfo(api_key, api_version, correlation_id, client_id), body)


def _decode_heartbeat(payload: bytes, api_version: int, correlation_id: int) -> DecodedRequest | None:
    """A usual Heartbeat read with ``struct``, or ``None`` for the generic codec to decide."""
    try:
        client_id, offset = _decode_header_v1(payload)
    except MalformedFrame:
        return None
    if api_version >= FLEXIBLE_FROM:
        after_tags = skip_empty_tag_section(payload, offset)
        if after_tags is None:
            return None
        offset = after_tags
    body = read_heartbeat_body(payload, offset, api_version)
    if body is None:
        return None
    return DecodedRequest(RequestHeaderInfo(_HEARTBEAT, api_version, correlation_id, client_id), body)


def _decode_header_v1(payload: bytes) -> tuple[str | None, int]:
    """The client id of a request header v1 (non-flexible) and where the body starts.

    The header is the fixed prefix plus a nullable int16-length string; reading it with ``struct`` costs a tenth
    of the generic schema walk. A negative length is null, as kafka-python reads it.
    """
    start = _HEADER_PREFIX.size
    if len(payload) < start + _INT16.size:
        raise MalformedFrame("unreadable request header: no client id length")
    (length,) = _INT16.unpack_from(payload, start)
    start += _INT16.size
    if length < 0:
        return None, start
    end = start + length
    if end > len(payload):
        raise MalformedFrame(f"unreadable request header: client id of {length} bytes overruns the frame")
    try:
        return payload[start:end].decode("utf-8"), end
    except UnicodeDecodeError as exc:
        raise MalformedFrame(f"unreadable request header: {exc!r}") from None


def _decode_flexible_header(payload: bytes) -> tuple[str | None, int]:
    """The client id of a request header v2 (flexible: tagged fields follow) and where the body starts."""
    stream = io.BytesIO(payload)
    try:
        raw_header = RequestHeader.decode(stream, flexible=True)
    except Exception as exc:  # kafka-python raises assorted errors on short or garbled input
        raise MalformedFrame(f"unreadable request header: {exc!r}") from None
    return raw_header.client_id, stream.tell()


def _length_prefixed(field: Any) -> bool:
    """Whether null is a length of -1 on the wire for ``field`` (strings, bytes, arrays, structs)."""
    return bool(field.is_array() or field.is_struct() or field.type_str in ("string", "bytes", "records"))


@dataclass(frozen=True)
class _NullCheck:
    """A field that may decode as null: whether null is allowed, and the checks of its elements or sub-fields."""

    name: str
    nullable: bool
    kind: Literal["value", "array", "struct", "struct_array"]  # an array holds simple values
    inner: tuple[_NullCheck, ...] = ()


_NULL_CHECKS: dict[tuple[int, int], tuple[_NullCheck, ...]] = {}


def _null_checks(struct: Any, version: int) -> tuple[_NullCheck, ...]:
    """The checks for ``struct`` at ``version``, derived from kafka-python's schema once and cached (the schema
    objects are module-level singletons, so their ids are stable keys)."""
    key = (id(struct), version)
    cached = _NULL_CHECKS.get(key)
    if cached is not None:
        return cached
    checks: list[_NullCheck] = []
    for name, field in struct.fields.items():
        if not field.for_version_q(version) or field.tagged_field_q(version) or not _length_prefixed(field):
            continue  # e.g. an all-zero uuid also decodes as None, and is fine
        nullable = bool(field.nullable_for_version_q(version))
        if field.is_struct_array() or field.is_struct():
            kind: Literal["struct", "struct_array"] = "struct_array" if field.is_struct_array() else "struct"
            checks.append(_NullCheck(name, nullable, kind, _null_checks(field, version)))
        elif field.is_array():
            checks.append(_NullCheck(name, nullable, "array"))
        elif not nullable:
            checks.append(_NullCheck(name, nullable, "value"))
    _NULL_CHECKS[key] = result = tuple(checks)
    return result


def _first_null_field(checks: tuple[_NullCheck, ...], value: Any, path: str = "") -> str | None:
    """The first field of ``value`` that decoded as null although its schema does not allow null.

    kafka-python decodes a -1 length as ``None`` whatever the schema says; Kafka refuses such a request, and the
    adapters rely on non-nullable arrays, strings and bytes being present, so the decoder refuses it too.
    """
    for check in checks:
        item = getattr(value, check.name, None)
        if item is None:
            if not check.nullable:
                return f"{path}{check.name}"
        elif check.kind == "struct_array":
            for element in item:
                found = _first_null_field(check.inner, element, f"{path}{check.name}[].")
                if found is not None:
                    return found
        elif check.kind == "struct":
            found = _first_null_field(check.inner, item, f"{path}{check.name}.")
            if found is not None:
                return found
        elif check.kind == "array" and any(element is None for element in item):
            return f"{path}{check.name}[]"
    return None


def response_class(api_key: ApiKey) -> Any:
    """kafka-python's response class for ``api_key`` (a :class:`SchemaResponseClass` for an API served through
    Kafka's schemas)."""
    if api_key in SCHEMA_API_KEYS:
        return SchemaResponseClass(api_key)
    return SCHEMAS[api_key][1]


def encode_response(response: Any, *, correlation_id: int) -> bytes:
    """Encode ``response`` (a versioned kafka-python response object) as a complete frame, size prefix included.

    The response header version follows the response's flexibility; kafka-python's ApiVersionsResponse pins
    header v0 on its own. Heartbeat, a third of all traffic at scale, is packed directly (same bytes, a tenth of
    the cost).
    """
    if isinstance(response, SchemaResponse):
        return response.frame(correlation_id)
    if type(response) is HeartbeatResponse and not response.tags and not response.unknown_tags:
        return _encode_heartbeat(response.version, correlation_id, response.throttle_time_ms, response.error_code)
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def _encode_heartbeat(version: int, correlation_id: int, throttle_time_ms: int, error_code: int) -> bytes:
    """A framed Heartbeat response at ``version`` (what kafka-python's generic encoder writes, field by field)."""
    if version == 0:
        return _HEARTBEAT_V0.pack(_HEARTBEAT_V0.size - 4, correlation_id, error_code)
    if version < 4:
        return _HEARTBEAT_V1.pack(_HEARTBEAT_V1.size - 4, correlation_id, throttle_time_ms, error_code)
    return _HEARTBEAT_V4.pack(_HEARTBEAT_V4.size - 4, correlation_id, 0, throttle_time_ms, error_code, 0)
