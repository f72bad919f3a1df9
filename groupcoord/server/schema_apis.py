"""APIs served through Kafka's own message schemas (:mod:`groupcoord.protocol.schemas`) instead of kafka-python.

kafka-python 3.x has no classes for the APIs of KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe), and the
APIs added since serve from the schemas too (the topic admin APIs), at Kafka's full version ranges. For them
a request body is the schema codec's dict, keyed by the schemas' field names (``body["GroupId"]``), and an adapter
answers with a :class:`SchemaResponse` holding such a dict. The server codec (:mod:`groupcoord.server.codec`) picks
this path by API key, so the endpoint and the adapters' interface stay the same for both kinds of API.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groupcoord.protocol.schemas import CodecError, decode_prefix, decode_request_header, schema_for
from groupcoord.protocol.schemas import decode_request as decode_schema_request
from groupcoord.protocol.schemas import encode_response as encode_schema_response

SCHEMA_API_KEYS: frozenset[int] = frozenset({1, 8, 9, 17, 19, 20, 29, 30, 31, 32, 36, 37, 42, 50, 51, 68, 69, 75})
"""The API keys served through Kafka's schemas: Fetch (1: its responses carry megabytes of records, which
kafka-python's encoder copies as its buffer grows), OffsetCommit (8) and OffsetFetch (9) (v10 names topics by id, past
kafka-python's schemas), SaslHandshake (17), SaslAuthenticate (36), CreateTopics (19), DeleteTopics (20),
DescribeAcls (29), CreateAcls (30), DeleteAcls (31),
DescribeConfigs (32), CreatePartitions (37), DeleteGroups (42: v3 is past kafka-python's schemas),
DescribeUserScramCredentials (50), AlterUserScramCredentials (51), ConsumerGroupHeartbeat (68),
ConsumerGroupDescribe (69) and DescribeTopicPartitions (75)."""

_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class SchemaResponse:
    """A response of a schema-served API: its key, version and body (a dict of the schema's field names)."""

    api_key: int
    version: int
    body: Mapping[str, Any] = field(default_factory=dict)

    def frame(self, correlation_id: int) -> bytes:
        """The complete response frame, size prefix included."""
        payload = encode_schema_response(self.api_key, self.version, correlation_id, self.body)
        return _SIZE.pack(len(payload)) + payload


class SchemaResponseClass:
    """Builds :class:`SchemaResponse` objects of one API as ``cls(version=..., **fields)``, the way the adapters
    build kafka-python's response objects (:meth:`groupcoord.server.api.RequestContext.response`)."""

    def __init__(self, api_key: int) -> None:
        self.api_key = api_key

    def __call__(self, *, version: int, **fields: Any) -> SchemaResponse:
        """A response at ``version`` with ``fields`` (the schema's PascalCase field names)."""
        return SchemaResponse(self.api_key, version, fields)


TRAILING_BYTES_IGNORED: frozenset[int] = frozenset({51})
"""APIs whose requests may carry bytes after the message, ignored as Kafka's parser ignores them:
AlterUserScramCredentials (51), where librdkafka 2.x writes one byte more than the schema holds."""


def decode_schema_body(payload: bytes) -> tuple[str | None, dict[str, Any]]:
    """The client id and the body of a schema-served request frame; a :class:`CodecError` when it does not fit
    the schema at its version (or, but for :data:`TRAILING_BYTES_IGNORED`, leaves bytes after it)."""
    header, offset = decode_request_header(payload)
    api_key = header["RequestApiKey"]
    if api_key in TRAILING_BYTES_IGNORED:
        body, _ = decode_prefix(schema_for(api_key, "request"), header["RequestApiVersion"], payload, offset)
        return header.get("ClientId"), body
    header, body = decode_schema_request(payload)
    return header.get("ClientId"), body


__all__ = ["SCHEMA_API_KEYS", "CodecError", "SchemaResponse", "SchemaResponseClass", "decode_schema_body"]
