"""A Kafka wire codec that interprets Apache Kafka's own message schemas.

The kafka-clients jar that ``make install`` fetched carries the JSON schemas its Java message classes are generated
from (``common/message/*.json``: every API's request and response, the two headers, and a few data formats). This
package reads them as data (:mod:`.loader`, :mod:`.model`) and encodes and decodes any message at any of its valid
versions by walking the schema as Kafka's generated code does (:mod:`.codec`), with whole frames and their headers
on top (:mod:`.frames`). Values are plain dicts keyed by the schemas' PascalCase field names.

>>> body = {"GroupId": "g", "GenerationId": 3, "MemberId": "m", "GroupInstanceId": None}
>>> decode("HeartbeatRequest", 4, encode("HeartbeatRequest", 4, body)) == body
True

Errors: :class:`CodecError` for bytes or values that do not fit (naming the message, version and field), an unknown
API key or an unsupported version; :class:`SchemasMissingError` when the jar is not there.
"""

from __future__ import annotations

from groupcoord.protocol.schemas.catalog import ApiKind, ApiVersionRange, api_versions, message_schema, schema_for
from groupcoord.protocol.schemas.codec import decode, decode_prefix, encode, is_default
from groupcoord.protocol.schemas.errors import CodecError, SchemaFormatError, SchemasMissingError
from groupcoord.protocol.schemas.frames import (
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from groupcoord.protocol.schemas.layout import UNKNOWN_TAGGED_FIELDS
from groupcoord.protocol.schemas.loader import load_schemas
from groupcoord.protocol.schemas.model import FieldSpec, MessageSpec, StructSpec, default_value, struct_default
from groupcoord.protocol.schemas.versions import Versions

__all__ = [
    "UNKNOWN_TAGGED_FIELDS",
    "ApiKind",
    "ApiVersionRange",
    "CodecError",
    "FieldSpec",
    "MessageSpec",
    "SchemaFormatError",
    "SchemasMissingError",
    "StructSpec",
    "Versions",
    "api_versions",
    "decode",
    "decode_prefix",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "default_value",
    "encode",
    "encode_request",
    "encode_response",
    "is_default",
    "load_schemas",
    "message_schema",
    "request_header_version",
    "response_header_version",
    "schema_for",
    "struct_default",
]
