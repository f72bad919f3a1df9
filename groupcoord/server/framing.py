"""Kafka framing: every request is a 4-byte big-endian size followed by that many bytes.

The size is checked against ``socket.request.max.bytes`` before a single byte of the body is read, so an oversized
frame costs the server four bytes of memory, not the frame.
"""

from __future__ import annotations

import asyncio

from groupcoord.server.codec import MalformedFrame, RequestRejected

SIZE_BYTES = 4


class FrameTooLarge(RequestRejected):
    """The announced frame size exceeds ``socket.request.max.bytes``."""


class TruncatedFrame(RequestRejected):
    """The peer closed the connection in the middle of a frame."""


async def read_frame(reader: asyncio.StreamReader, *, max_bytes: int) -> bytes | None:
    """Read one frame's payload; ``None`` on a clean end of stream between frames.

    Raises :class:`FrameTooLarge`, :class:`MalformedFrame` (negative size) or :class:`TruncatedFrame`.
    """
    try:
        prefix = await reader.readexactly(SIZE_BYTES)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise TruncatedFrame(f"stream ended after {len(exc.partial)} bytes of a frame size") from None
    size = int.from_bytes(prefix, "big", signed=True)
    if size < 0:
        raise MalformedFrame(f"negative frame size {size}")
    if size > max_bytes:
        raise FrameTooLarge(f"frame of {size} bytes exceeds socket.request.max.bytes={max_bytes}")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        raise TruncatedFrame(f"stream ended after {len(exc.partial)} of {size} frame bytes") from None
