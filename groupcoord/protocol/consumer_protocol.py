"""Kafka's ConsumerProtocol Subscription and Assignment (versions 0 to 3): a small pure decoder and encoder.

These are the member metadata and member state that the ``consumer`` protocol type carries inside JoinGroup and
SyncGroup. The layout is Kafka's (big-endian, non-flexible)::

    Subscription => version:int16 topics:[string] user_data:bytes
                    owned_partitions:[topic:string partitions:[int32]]   (v1+)
                    generation_id:int32                                  (v2+, default -1)
                    rack_id:nullable string                              (v3+)
    Assignment   => version:int16 assigned_partitions:[topic:string partitions:[int32]] user_data:bytes

As in Kafka, a version newer than 3 is read as version 3 (newer versions only append fields).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

PROTOCOL_TYPE = "consumer"
"""The protocol type whose metadata the coordinator understands."""

LATEST_VERSION = 3


class ConsumerProtocolError(ValueError):
    """The bytes are not a valid ConsumerProtocol Subscription or Assignment."""


@dataclass(frozen=True)
class TopicPartitions:
    """One topic and some of its partitions."""

    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class Subscription:
    """A member's subscription: topics it wants, partitions it owns (v1+), its last generation (v2+), its rack."""

    version: int = LATEST_VERSION
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartitions, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """A member's assignment: the partitions it should consume."""

    version: int = LATEST_VERSION
    partitions: tuple[TopicPartitions, ...]
    user_data: bytes | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _take(self, size: int) -> bytes:
        if size < 0 or self._pos + size > len(self._data):
            raise ConsumerProtocolError(f"truncated at byte {self._pos} (wanted {size} more)")
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def int16(self) -> int:
        value: int = struct.unpack(">h", self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = struct.unpack(">i", self._take(4))[0]
        return value

    def nullable_string(self) -> str | None:
        size = self.int16()
        if size == -1:
            return None
        try:
            return self._take(size).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConsumerProtocolError(f"invalid UTF-8 string: {exc}") from None

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ConsumerProtocolError("null where a string is required")
        return value

    def nullable_bytes(self) -> bytes | None:
        size = self.int32()
        return None if size == -1 else self._take(size)

    def count(self) -> int:
        size = self.int32()
        if size < -1:
            raise ConsumerProtocolError(f"invalid array length {size}")
        return max(size, 0)

    def topic_partitions(self) -> tuple[TopicPartitions, ...]:
        result = []
        for _ in range(self.count()):
            topic = self.string()
            partitions = tuple(self.int32() for _ in range(self.count()))
            result.append(TopicPartitions(topic, partitions))
        return tuple(result)


class _Writer:
    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, value: int) -> None:
        self._parts.append(struct.pack(">h", value))

    def int32(self, value: int) -> None:
        self._parts.append(struct.pack(">i", value))

    def nullable_string(self, value: str | None) -> None:
        if value is None:
            self.int16(-1)
            return
        raw = value.encode("utf-8")
        self.int16(len(raw))
        self._parts.append(raw)

    def nullable_bytes(self, value: bytes | None) -> None:
        if value is None:
            self.int32(-1)
            return
        self.int32(len(value))
        self._parts.append(value)

    def topic_partitions(self, items: tuple[TopicPartitions, ...]) -> None:
        self.int32(len(items))
        for item in items:
            self.nullable_string(item.topic)
            self.int32(len(item.partitions))
            for partition in item.partitions:
                self.int32(partition)

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def _check_version(version: int) -> None:
    if version < 0:
        raise ConsumerProtocolError(f"negative version {version}")


def decode_subscription(data: bytes) -> Subscription:
    """Decode a Subscription of any version; raises :class:`ConsumerProtocolError` on malformed bytes."""
    reader = _Reader(data)
    version = reader.int16()
    _check_version(version)
    topics = tuple(reader.string() for _ in range(reader.count()))
    user_data = reader.nullable_bytes()
    owned: tuple[TopicPartitions, ...] = ()
    generation_id = -1
    rack_id = None
    if version >= 1:
        owned = reader.topic_partitions()
    if version >= 2:
        generation_id = reader.int32()
    if version >= 3:
        rack_id = reader.nullable_string()
    return Subscription(version=version, topics=topics, user_data=user_data, owned_partitions=owned,
                        generation_id=generation_id, rack_id=rack_id)


def encode_subscription(subscription: Subscription) -> bytes:
    """Encode ``subscription`` at its own version (fields newer than that version are left out)."""
    version = subscription.version
    _check_version(version)
    writer = _Writer()
    writer.int16(version)
    writer.int32(len(subscription.topics))
    for topic in subscription.topics:
        writer.nullable_string(topic)
    writer.nullable_bytes(subscription.user_data)
    if version >= 1:
        writer.topic_partitions(subscription.owned_partitions)
    if version >= 2:
        writer.int32(subscription.generation_id)
    if version >= 3:
        writer.nullable_string(subscription.rack_id)
    return writer.getvalue()


def decode_assignment(data: bytes) -> Assignment:
    """Decode an Assignment of any version; empty bytes decode to an empty assignment (a member with nothing)."""
    if not data:
        return Assignment(version=0, partitions=())
    reader = _Reader(data)
    version = reader.int16()
    _check_version(version)
    partitions = reader.topic_partitions()
    user_data = reader.nullable_bytes()
    return Assignment(version=version, partitions=partitions, user_data=user_data)


def encode_assignment(assignment: Assignment) -> bytes:
    """Encode ``assignment`` (all versions 0-3 share one layout)."""
    _check_version(assignment.version)
    writer = _Writer()
    writer.int16(assignment.version)
    writer.topic_partitions(assignment.partitions)
    writer.nullable_bytes(assignment.user_data)
    return writer.getvalue()


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The topics a ``consumer`` member's metadata subscribes to, or ``None`` when it cannot be decoded."""
    try:
        return frozenset(decode_subscription(metadata).topics)
    except ConsumerProtocolError:
        return None
