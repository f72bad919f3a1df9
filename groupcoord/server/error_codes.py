"""Kafka error codes the wire layer itself produces (until it can take them from ``groupcoord.protocol.errors``)."""

from __future__ import annotations

UNKNOWN_SERVER_ERROR = -1
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
