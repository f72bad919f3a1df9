"""Writers generated from the schemas: one straight-line Python function per struct and version, the fast path of
:func:`~groupcoord.protocol.schemas.codec.encode`.

The writer of a struct takes the regular case only: a plain ``dict`` whose keys are fields present (untagged) at the
version, every value of exactly its field's Python type (``int`` for the integers, ``str``, ``bytes``, ``bool``,
``float``, ``uuid.UUID``, ``list`` or ``tuple`` for arrays), null only where the field is nullable, every tagged
field at its default. Anything else raises :class:`~groupcoord.protocol.schemas.generated.Irregular` (or whatever
Python raises on the way, such as ``struct.error`` for a number out of range), and the caller encodes the value with
the interpretive writer, which then writes it (an absent ignorable field, a tagged value, an ``IntEnum``) or raises
its :class:`~groupcoord.protocol.schemas.errors.CodecError`. Where the generated writer writes, it writes the bytes
the interpretive one would (a property test holds the two side by side).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

from groupcoord.protocol.schemas.generated import FunctionSource, Irregular
from groupcoord.protocol.schemas.layout import Slot, layout
from groupcoord.protocol.schemas.model import StructSpec, default_value
from groupcoord.protocol.schemas.primitives import FIXED_CODECS, INT8, INT16, INT32, uvarint_bytes

StructWriter = Callable[[bytearray, Any], None]
"""``writer(out, value)`` appends ``value``'s bytes to ``out``; raises on anything irregular."""

MAX_STRING_BYTES = 0x7FFF
"""The longest string Kafka writes, in UTF-8 bytes (as the interpretive writer checks)."""

_PYTHON_TYPES = {"bool": "bool", "float64": "float", "string": "str", "uuid": "UUID"}
"""The exact Python type of a scalar's regular value (the integer types take ``int``; bytes take two)."""


@functools.cache
def struct_writer(struct: StructSpec, version: int, flexible: bool) -> StructWriter:
    """The generated writer of ``struct`` at ``version`` (``flexible``: the message's flexible versions include it)."""
    return _Generator(struct, version, flexible).compile()


def _uvarint(value: int) -> bytes:
    if value > 0xFFFFFFFF:
        raise Irregular
    return uvarint_bytes(value)


class _Generator:
    """Writes the source of one struct writer."""

    def __init__(self, struct: StructSpec, version: int, flexible: bool) -> None:
        self.struct = struct
        self.version = version
        self.flexible = flexible
        self.source = FunctionSource(uvarint=_uvarint, UUID=uuid.UUID, MAX_STRING_BYTES=MAX_STRING_BYTES)

    def compile(self) -> StructWriter:
        """The compiled writer."""
        self.source.emit("", "def write(out, value):")
        if self.version not in self.struct.versions:
            self.source.emit("    ", "raise Irregular")
        else:
            shape = layout(self.struct, self.version, self.flexible)
            names = self.source.constant(frozenset(slot.field.name for slot in shape.untagged))
            self.source.emit("    ", "if type(value) is not dict or not value.keys() <= " + names + ":",
                             "    raise Irregular")
            for slot in shape.untagged:
                self._field(slot)
            if self.flexible:  # no tagged field: the regular case never sets one (see the module)
                self.source.emit("    ", "out.append(0)")
        writer: StructWriter = self.source.compile("write", f"writer {self.struct.name} v{self.version}")
        return writer

    def _field(self, slot: Slot) -> None:
        """Emit the writing of one untagged field, read from ``value`` (its default when the key is missing)."""
        field = slot.field
        item = self.source.variable()
        default = default_value(field)
        if isinstance(default, dict):  # a missing struct would be written as its defaults: left to the interpreter
            self.source.emit("    ", f"{item} = value.get({field.name!r}, Irregular)", f"if {item} is Irregular:",
                             "    raise Irregular")
        else:  # an empty array's default is written as an empty tuple: the same bytes
            missing = "()" if isinstance(default, list) else self.source.constant(default)
            self.source.emit("    ", f"{item} = value.get({field.name!r}, {missing})")
        if field.is_array:
            self._array(slot, item)
        elif field.struct is not None:
            nested = self.source.constant(struct_writer(field.struct, self.version, self.flexible))
            if slot.nullable:
                self.source.emit("    ", f"if {item} is None:", f"    out += {self.source.constant(INT8.pack(-1))}",
                                 "else:", f"    out += {self.source.constant(INT8.pack(1))}",
                                 f"    {nested}(out, {item})")
            else:
                self.source.emit("    ", f"{nested}(out, {item})")
        else:
            self._scalar("    ", field.element, slot.compact, slot.nullable, item)

    def _array(self, slot: Slot, item: str) -> None:
        self.source.emit("    ", f"if {item} is None:")
        self._null("        ", slot.nullable, slot.compact, INT32)
        self.source.emit("    ", "else:", f"    if type({item}) is not list and type({item}) is not tuple:",
                         "        raise Irregular")
        self._length("        ", slot.compact, INT32, f"len({item})")
        element = self.source.variable()
        self.source.emit("    ", f"    for {element} in {item}:")
        field = slot.field
        if field.struct is not None:
            nested = self.source.constant(struct_writer(field.struct, self.version, self.flexible))
            self.source.emit("    ", f"        {nested}(out, {element})")
        else:
            self._scalar("            ", field.element, slot.compact, False, element)

    def _null(self, indent: str, nullable: bool, compact: bool, legacy: Any) -> None:
        if not nullable:
            self.source.emit(indent, "raise Irregular")
        elif compact:
            self.source.emit(indent, "out.append(0)")
        else:
            self.source.emit(indent, f"out += {self.source.constant(legacy.pack(-1))}")

    def _length(self, indent: str, compact: bool, legacy: Any, length: str) -> None:
        if compact:
            self.source.emit(indent, f"if {length} < 127:", f"    out.append({length} + 1)", "else:",
                             f"    out += uvarint({length} + 1)")
        else:
            self.source.emit(indent, f"out += {self.source.constant(legacy.pack)}({length})")

    def _scalar(self, indent: str, element: str, compact: bool, nullable: bool, item: str) -> None:
        codec = FIXED_CODECS.get(element)
        if codec is not None:
            python_type = _PYTHON_TYPES.get(element, "int")
            self.source.emit(indent, f"if type({item}) is not {python_type}:", "    raise Irregular",
                             f"out += {self.source.constant(codec.pack)}({item})")
        elif element == "bool":
            self.source.emit(indent, f"if type({item}) is not bool:", "    raise Irregular",
                             f"out.append(1 if {item} else 0)")
        elif element == "uuid":
            self.source.emit(indent, f"if type({item}) is not UUID:", "    raise Irregular", f"out += {item}.bytes")
        elif element in ("string", "bytes", "records"):
            self._variable_length(indent, element, compact, nullable, item)
        else:
            self.source.emit(indent, "raise Irregular")

    def _variable_length(self, indent: str, element: str, compact: bool, nullable: bool, item: str) -> None:
        legacy = INT16 if element == "string" else INT32
        self.source.emit(indent, f"if {item} is None:")
        self._null(indent + "    ", nullable, compact, legacy)
        data = self.source.variable()
        if element == "string":
            self.source.emit(indent, f"elif type({item}) is not str:", "    raise Irregular", "else:",
                             f"    {data} = {item}.encode('utf-8')", f"    if len({data}) > MAX_STRING_BYTES:",
                             "        raise Irregular")
        else:
            self.source.emit(indent, f"elif type({item}) is not bytes and type({item}) is not bytearray:",
                             "    raise Irregular", "else:", f"    {data} = {item}")
        self._length(indent + "    ", compact, legacy, f"len({data})")
        self.source.emit(indent, f"    out += {data}")
