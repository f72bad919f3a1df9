"""Readers generated from the schemas: one straight-line Python function per struct and version, the fast path of
:func:`~groupcoord.protocol.schemas.codec.decode_prefix`.

The interpretive reader walks a struct's layout field by field, with a few calls, lookups and checks per primitive:
an OffsetCommit of 50 partitions costs it hundreds of calls. For each ``(struct, version, flexible)`` this module
writes the function that reads exactly that layout, compiles it once, and caches it.

It reads only the regular case. Anything else raises :class:`Irregular` (or whatever Python raises on the way, such
as a ``UnicodeDecodeError``): a null where the field is not nullable, a negative length other than -1, a length past
the end of the frame, a string longer than Kafka's limit, any tagged field, a multi-byte varint that does not fit
32 bits, a struct that does not exist at the version. The caller then decodes the same bytes with the interpretive
reader, whose value or :class:`~groupcoord.protocol.schemas.errors.CodecError` (with its field path) is the answer.
So the generated reader never accepts what the interpretive one refuses, and where both accept they return equal
values, dict keys in the schema's field order (a property test holds the two side by side).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

from groupcoord.protocol.schemas.generated import FunctionSource, Irregular
from groupcoord.protocol.schemas.layout import Slot, layout
from groupcoord.protocol.schemas.model import FieldSpec, StructSpec, default_value
from groupcoord.protocol.schemas.primitives import FIXED_CODECS, INT8, INT16, INT32, MAX_VARINT_BYTES, UUID_SIZE

StructReader = Callable[[Any, int, int], tuple[dict[str, Any], int]]
"""``reader(data, position, end)`` -> ``(struct, position after it)``; raises on anything irregular."""

MAX_STRING_BYTES = 0x7FFF
"""The longest string Kafka reads, in UTF-8 bytes (as the interpretive reader checks)."""


def read_uvarint(data: Any, position: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 32 bits at ``data[position]``: its value and the position after it."""
    value = 0
    for index in range(MAX_VARINT_BYTES):
        if position >= end:
            raise Irregular
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            if value > 0xFFFFFFFF:
                raise Irregular
            return value, position
    raise Irregular


@functools.cache
def struct_reader(struct: StructSpec, version: int, flexible: bool) -> StructReader:
    """The generated reader of ``struct`` at ``version`` (``flexible``: the message's flexible versions include it)."""
    return _Generator(struct, version, flexible).compile()


class _Generator:
    """Writes the source of one struct reader."""

    def __init__(self, struct: StructSpec, version: int, flexible: bool) -> None:
        self.struct = struct
        self.version = version
        self.flexible = flexible
        self.source = FunctionSource(read_uvarint=read_uvarint, UUID=uuid.UUID, UUID_SIZE=UUID_SIZE,
                                     MAX_STRING_BYTES=MAX_STRING_BYTES)

    def compile(self) -> StructReader:
        """The compiled reader."""
        if self.version not in self.struct.versions:
            return _never
        shape = layout(self.struct, self.version, self.flexible)
        values: dict[str, str] = {}
        self.source.emit("", "def read(data, pos, end):")
        for slot in shape.untagged:
            values[slot.field.name] = self._field(slot, "    ")
        if self.flexible:  # only an empty tagged-field section is regular
            self.source.emit("    ", "if pos >= end or data[pos]:", "    raise Irregular", "pos += 1")
        for slot in shape.tagged:
            values[slot.field.name] = self._default(slot.field)
        for field in shape.absent:
            values[field.name] = self._default(field)
        items = ", ".join(f"{field.name!r}: {values[field.name]}" for field in self.struct.fields)
        self.source.emit("    ", f"return {{{items}}}, pos")
        reader: StructReader = self.source.compile("read", f"reader {self.struct.name} v{self.version}")
        return reader

    # --- pieces of source ----------------------------------------------------------------------------------------
    def _default(self, field: FieldSpec) -> str:
        value = default_value(field)
        if isinstance(value, list | dict):  # a fresh one per struct read, as the interpretive reader gives
            return f"{self.source.constant(default_value)}({self.source.constant(field)})"
        return self.source.constant(value)

    def _length(self, indent: str, compact: bool, legacy: Any, nullable: bool, target: str) -> None:
        """Read a length prefix into ``target``: -1 for null (only where nullable), else the length."""
        if compact:
            self.source.emit(indent, "if pos >= end:", "    raise Irregular", f"{target} = data[pos] - 1",
                       f"if {target} >= 127:", f"    {target}, pos = read_uvarint(data, pos, end)",
                       f"    {target} -= 1", "else:", "    pos += 1")
        else:
            unpack = self.source.constant(legacy.unpack_from)
            self.source.emit(indent, f"if pos + {legacy.size} > end:", "    raise Irregular",
                       f"{target}, = {unpack}(data, pos)", f"pos += {legacy.size}")
        self.source.emit(indent, f"if {target} < {-1 if nullable else 0}:", "    raise Irregular")

    def _field(self, slot: Slot, indent: str) -> str:
        """Emit the reading of one untagged field; returns the variable holding its value."""
        field = slot.field
        target = self.source.variable()
        if field.is_array:
            self._length(indent, slot.compact, INT32, slot.nullable, target)
            self.source.emit(indent, f"if {target} == -1:", f"    {target} = None", "else:",
                       f"    if {target} > end - pos:", "        raise Irregular", f"    {target}_n = {target}",
                       f"    {target} = []", f"    for _ in range({target}_n):")
            inner = indent + "        "
            if field.struct is not None:
                nested = self.source.constant(struct_reader(field.struct, self.version, self.flexible))
                self.source.emit(inner, f"item, pos = {nested}(data, pos, end)")
            else:
                self._scalar(inner, field.element, slot.compact, False, "item")
            self.source.emit(inner, f"{target}.append(item)")
            return target
        if field.struct is not None:
            nested = self.source.constant(struct_reader(field.struct, self.version, self.flexible))
            if slot.nullable:
                unpack = self.source.constant(INT8.unpack_from)
                self.source.emit(indent, "if pos >= end:", "    raise Irregular", f"if {unpack}(data, pos)[0] < 0:",
                           "    pos += 1", f"    {target} = None", "else:", "    pos += 1",
                           f"    {target}, pos = {nested}(data, pos, end)")
            else:
                self.source.emit(indent, f"{target}, pos = {nested}(data, pos, end)")
            return target
        self._scalar(indent, field.element, slot.compact, slot.nullable, target)
        return target

    def _scalar(self, indent: str, element: str, compact: bool, nullable: bool, target: str) -> None:
        codec = FIXED_CODECS.get(element)
        if codec is not None:
            unpack = self.source.constant(codec.unpack_from)
            self.source.emit(indent, f"if pos + {codec.size} > end:", "    raise Irregular",
                       f"{target}, = {unpack}(data, pos)", f"pos += {codec.size}")
        elif element == "bool":
            self.source.emit(indent, "if pos >= end:", "    raise Irregular", f"{target} = data[pos] != 0", "pos += 1")
        elif element == "uuid":
            self.source.emit(indent, "if pos + UUID_SIZE > end:", "    raise Irregular",
                       f"{target} = UUID(bytes=bytes(data[pos:pos + UUID_SIZE]))", "pos += UUID_SIZE")
        elif element == "string":
            self._length(indent, compact, INT16, nullable, target)
            self.source.emit(indent, f"if {target} == -1:", f"    {target} = None",
                       f"elif {target} > MAX_STRING_BYTES or {target} > end - pos:", "    raise Irregular", "else:",
                       f"    {target}, pos = str(data[pos:pos + {target}], 'utf-8'), pos + {target}")
        elif element in ("bytes", "records"):
            self._length(indent, compact, INT32, nullable, target)
            self.source.emit(indent, f"if {target} == -1:", f"    {target} = None",
                       f"elif {target} > end - pos:", "    raise Irregular", "else:",
                       f"    {target}, pos = bytes(data[pos:pos + {target}]), pos + {target}")
        else:
            self.source.emit(indent, "raise Irregular")


def _never(data: Any, position: int, end: int) -> tuple[dict[str, Any], int]:
    raise Irregular
