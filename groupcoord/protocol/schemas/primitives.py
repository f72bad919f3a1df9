"""Kafka's wire primitives: big-endian fixed-size numbers, unsigned varints, uuids and raw byte runs.

:class:`Reader` reads from a bounded window of a buffer and raises :class:`FieldProblem` when the window runs out;
:class:`Writer` appends to a ``bytearray``. Which length prefix a string, bytes or array takes (int16/int32 or a
compact unsigned varint) is the codec's choice, not theirs.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from types import MappingProxyType

from groupcoord.protocol.schemas.errors import FieldProblem

FIXED_CODECS: Mapping[str, struct.Struct] = MappingProxyType(
    {
        "int8": struct.Struct(">b"),
        "int16": struct.Struct(">h"),
        "uint16": struct.Struct(">H"),
        "int32": struct.Struct(">i"),
        "uint32": struct.Struct(">I"),
        "int64": struct.Struct(">q"),
        "float64": struct.Struct(">d"),
    }
)
"""The fixed-size number types and their big-endian layouts."""

INT8 = FIXED_CODECS["int8"]
"""An int8: a bool, and the null marker of a nullable struct."""
INT16 = FIXED_CODECS["int16"]
"""An int16: the length of a string in non-flexible versions."""
INT32 = FIXED_CODECS["int32"]
"""An int32: the length of bytes, records and arrays in non-flexible versions."""

UUID_SIZE = 16
"""A uuid's bytes on the wire."""
MAX_VARINT_BYTES = 5
"""An unsigned varint of Kafka's holds 32 bits, so at most five bytes."""


class Reader:
    """Reads primitives from ``data[start:end]``; ``position`` is the next byte to read."""

    __slots__ = ("_data", "end", "position")

    def __init__(self, data: bytes | bytearray | memoryview, start: int = 0, end: int | None = None) -> None:
        self._data = data
        self.position = start
        self.end = len(data) if end is None else end

    @property
    def remaining(self) -> int:
        """Bytes left in the window."""
        return self.end - self.position

    def _need(self, size: int, what: str) -> int:
        start = self.position
        if size > self.end - start:
            raise FieldProblem(f"{what} needs {size} bytes, only {self.end - start} left (truncated frame)")
        self.position = start + size
        return start

    def fixed(self, codec: struct.Struct, what: str) -> int | float:
        """One fixed-size number (``what`` names it in an error)."""
        start = self._need(codec.size, what)
        value: int | float = codec.unpack_from(self._data, start)[0]
        return value

    def uuid(self) -> uuid.UUID:
        """A 16-byte uuid."""
        start = self._need(UUID_SIZE, "uuid")
        return uuid.UUID(bytes=bytes(self._data[start : start + UUID_SIZE]))

    def raw(self, size: int, what: str) -> bytes:
        """``size`` bytes, copied."""
        start = self._need(size, what)
        return bytes(self._data[start : start + size])

    def window(self, size: int, what: str) -> Reader:
        """A reader over the next ``size`` bytes, which this reader then skips."""
        start = self._need(size, what)
        return Reader(self._data, start, start + size)

    def uvarint(self, what: str) -> int:
        """An unsigned varint of at most 32 bits."""
        value = 0
        for index in range(MAX_VARINT_BYTES):
            if self.position >= self.end:
                raise FieldProblem(f"{what} (unsigned varint) runs past the end of the data (truncated frame)")
            byte = self._data[self.position]
            self.position += 1
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                if value > 0xFFFFFFFF:
                    raise FieldProblem(f"{what} (unsigned varint) does not fit in 32 bits")
                return value
        raise FieldProblem(f"{what} (unsigned varint) is longer than {MAX_VARINT_BYTES} bytes")


class Writer:
    """Appends primitives to ``out``."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def fixed(self, codec: struct.Struct, value: int | float) -> None:
        """One fixed-size number (the caller has checked its range)."""
        self.out += codec.pack(value)

    def uvarint(self, value: int) -> None:
        """An unsigned varint."""
        out = self.out
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        """Bytes as they are."""
        self.out += data


def uvarint_bytes(value: int) -> bytes:
    """The unsigned varint encoding of ``value`` on its own."""
    writer = Writer()
    writer.uvarint(value)
    return bytes(writer.out)
