"""Heartbeat request bodies read with ``struct``: the one request that arrives once per member every few seconds.

At 10,000 members kafka-python's generic schema walk was the largest remaining per-heartbeat cost (about 10 us at
v3 and 18 us at v4 of the ~20-40 us a heartbeat costs the server). Heartbeat's layout is tiny and fixed:

- v0-v2: group_id (string), generation_id (int32), member_id (string);
- v3: the same plus group_instance_id (nullable string);
- v4 (flexible): compact strings (unsigned-varint length + 1), then an empty tagged-field section; the request
  header v2 also ends with a tagged-field section.

:func:`read_heartbeat_body` reads exactly that and nothing unusual: a null where the schema forbids one, a compact
string of 127 bytes or more (a multi-byte varint), any tagged field, bytes left over or invalid UTF-8 make it
return ``None``, and the caller then uses the generic codec, which accepts or rejects the frame as before. So the
fast path can only ever agree with the generic decoder; a property test checks that it does, on every version.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from

FLEXIBLE_FROM = 4
"""The first flexible Heartbeat version (compact strings, tagged fields)."""

INSTANCE_ID_FROM = 3
"""The first Heartbeat version with group_instance_id (KIP-345)."""


class HeartbeatBody(NamedTuple):
    """A decoded Heartbeat request body: the fields kafka-python's ``HeartbeatRequest`` has, at ``version``.

    ``group_instance_id`` is ``None`` before v3 (the field does not exist there). Immutable like a frozen
    dataclass, but built in a third of the time, which matters once per heartbeat.
    """

    version: int
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


class _Unusual(Exception):
    """Something the fast path does not read; the generic codec decides."""


def read_heartbeat_body(payload: bytes, offset: int, version: int) -> HeartbeatBody | None:
    """The Heartbeat body at ``version`` starting at ``payload[offset]``, or ``None`` when the frame is unusual."""
    try:
        if version >= FLEXIBLE_FROM:
            return _read_flexible(payload, offset, version)
        return _read_classic(payload, offset, version)
    except (_Unusual, struct.error, UnicodeDecodeError, IndexError):
        return None


def skip_empty_tag_section(payload: bytes, offset: int) -> int | None:
    """Where a flexible request header's tagged-field section ends, when it is empty (one zero byte); else ``None``."""
    if offset < len(payload) and payload[offset] == 0:
        return offset + 1
    return None


def _read_classic(payload: bytes, offset: int, version: int) -> HeartbeatBody:
    size = len(payload)
    (length,) = _INT16(payload, offset)
    end = offset + 2 + length
    if length < 0 or end > size:
        raise _Unusual  # null group_id (the generic codec rejects it by name) or a length past the frame
    group_id = payload[offset + 2:end].decode()
    (generation_id,) = _INT32(payload, end)
    offset = end + 4
    (length,) = _INT16(payload, offset)
    end = offset + 2 + length
    if length < 0 or end > size:
        raise _Unusual
    member_id = payload[offset + 2:end].decode()
    instance_id = None
    if version >= INSTANCE_ID_FROM:
        offset = end
        (length,) = _INT16(payload, offset)
        end = offset + 2 + max(length, 0)
        if end > size:
            raise _Unusual
        instance_id = payload[offset + 2:end].decode() if length >= 0 else None
    if end != size:
        raise _Unusual  # bytes left over
    return HeartbeatBody(version, group_id, generation_id, member_id, instance_id)


def _read_flexible(payload: bytes, offset: int, version: int) -> HeartbeatBody:
    group_id, offset = _compact_string(payload, offset)
    (generation_id,) = _INT32(payload, offset)
    member_id, offset = _compact_string(payload, offset + 4)
    instance_id, offset = _compact_string(payload, offset)
    if group_id is None or member_id is None or offset + 1 != len(payload) or payload[offset] != 0:
        raise _Unusual  # a null required field, tagged fields, or bytes left over
    return HeartbeatBody(version, group_id, generation_id, member_id, instance_id)


def _compact_string(payload: bytes, offset: int) -> tuple[str | None, int]:
    """A compact (nullable) string whose varint length fits in one byte."""
    length_plus_one = payload[offset]
    if length_plus_one & 0x80:
        raise _Unusual  # a multi-byte varint: 127 bytes or more
    if length_plus_one == 0:
        return None, offset + 1
    end = offset + length_plus_one
    if end > len(payload):
        raise _Unusual
    return payload[offset + 1:end].decode(), end
