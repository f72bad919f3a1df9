"""Encoding and decoding a message body at a version, by walking its schema (Kafka's generated ``write``/``read``).

Values are plain Python: a struct is a dict keyed by the schema's field names (Kafka's PascalCase), an array a list,
and the primitives are ``int`` (int8 to int64, uint16, uint32), ``bool``, ``float`` (float64), ``str`` (string),
``bytes`` (bytes and records) and ``uuid.UUID``; null is ``None``.

The rules are Kafka's:

- A version in the message's flexible versions writes strings, bytes and arrays with a compact length (an unsigned
  varint of length + 1, 0 for null) and ends every struct with its tagged fields (an unsigned varint count, then per
  field its tag, its size and its value, in ascending tag order). Other versions use an int16 length for strings and
  an int32 length for bytes and arrays, -1 for null. A nullable struct is preceded by an int8 (-1 null, 1 present).
- A tagged field is written only when it holds a value other than its default.
- A field that does not exist at the version is skipped on encode, and must hold its default there unless the
  schema calls it ignorable (a :class:`CodecError`, as Kafka's ``UnsupportedVersionException``); decode fills it
  with its default. A key of the value dict that is no field of the struct is an error; a missing key means the
  default.
- Tags a struct does not know are kept, as Kafka's ``_unknownTaggedFields``: under the key
  :data:`UNKNOWN_TAGGED_FIELDS` (a dict from tag to the raw bytes of its value, present only when there are some),
  and written back, in tag order among the known ones, on encode.

Decoding is stricter than Kafka's generated readers in three places, each a :class:`CodecError`: a negative length
other than -1, a tagged field whose value does not fill exactly the size its header gives, and bytes left after the
message.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from struct import Struct
from typing import Any

from groupcoord.protocol.schemas.catalog import message_schema
from groupcoord.protocol.schemas.errors import CodecError, FieldProblem
from groupcoord.protocol.schemas.generated_reader import struct_reader
from groupcoord.protocol.schemas.generated_writer import struct_writer
from groupcoord.protocol.schemas.layout import UNKNOWN_TAGGED_FIELDS, Layout, Slot
from groupcoord.protocol.schemas.layout import layout as layout_of
from groupcoord.protocol.schemas.model import INTEGER_RANGES, FieldSpec, MessageSpec, StructSpec, default_value
from groupcoord.protocol.schemas.primitives import FIXED_CODECS, INT8, INT16, INT32, Reader, Writer

MAX_STRING_BYTES = 0x7FFF
"""The longest string Kafka writes or reads, in UTF-8 bytes."""

MAX_ARRAY_LENGTH = 2**31 - 1
"""The most elements (or bytes) an int32 length can announce."""


def encode(message: MessageSpec | str, version: int, value: Mapping[str, Any], *, generated: bool = True) -> bytes:
    """The bytes of ``value`` as message ``message`` (a schema or its name) at ``version``.

    The writer generated for the struct and version (:mod:`~groupcoord.protocol.schemas.generated_writer`) writes
    the regular case; anything else, and everything with ``generated=False``, goes through the interpretive writer,
    which gives the bytes or the :class:`CodecError`.
    """
    spec = _schema(message)
    check_version(spec, version)
    flexible = version in spec.flexible_versions
    if generated:
        out = bytearray()
        try:
            struct_writer(spec.struct, version, flexible)(out, value)
            return bytes(out)
        except Exception:  # not the regular form: the interpretive writer decides (see generated_writer)
            pass
    writer = Writer()
    try:
        _write_struct(writer, spec.struct, value, version, flexible)
    except FieldProblem as problem:
        raise CodecError(spec.name, version, problem.field_path(), problem.problem) from None
    return bytes(writer.out)


def decode(message: MessageSpec | str, version: int, data: bytes | bytearray | memoryview, *,
           generated: bool = True) -> dict[str, Any]:
    """The value that ``data`` (exactly one message, nothing after it) holds as ``message`` at ``version``
    (``generated=False``: with the interpretive reader alone; tests compare the two)."""
    spec = _schema(message)
    value, end = decode_prefix(spec, version, data, generated=generated)
    if end != len(data):
        raise CodecError(spec.name, version, None, f"{len(data) - end} bytes left after the message")
    return value


def decode_prefix(
    message: MessageSpec | str, version: int, data: bytes | bytearray | memoryview, start: int = 0, *,
    generated: bool = True,
) -> tuple[dict[str, Any], int]:
    """Decode one message that starts at ``data[start]``; return it and the offset of the first byte after it.

    The reader generated for the struct and version (:mod:`~groupcoord.protocol.schemas.generated_reader`) reads the
    regular case; anything else, and everything with ``generated=False``, goes through the interpretive reader,
    which gives the value or the :class:`CodecError`.
    """
    spec = _schema(message)
    check_version(spec, version)
    flexible = version in spec.flexible_versions
    if generated:
        try:
            return struct_reader(spec.struct, version, flexible)(data, start, len(data))
        except Exception:  # not the regular form: the interpretive reader decides (see generated_reader)
            pass
    reader = Reader(data, start)
    try:
        value = _read_struct(reader, spec.struct, version, flexible)
    except FieldProblem as problem:
        raise CodecError(spec.name, version, problem.field_path(), problem.problem) from None
    return value, reader.position


def check_version(spec: MessageSpec, version: int) -> None:
    """A :class:`CodecError` unless ``version`` is one of the message's valid versions."""
    if not isinstance(version, int) or version not in spec.valid_versions:
        raise CodecError(spec.name, version, None, f"unsupported version (valid versions: {spec.valid_versions})")


def is_default(field: FieldSpec, value: Any) -> bool:
    """True when ``value`` equals the field's default (Kafka's non-default check, which decides whether a tagged
    field is written and whether an absent field may be dropped)."""
    if field.default == "null" or (field.element == "records" and not field.is_array):
        return value is None
    if value is None:
        return False
    if field.is_array:
        return isinstance(value, list | tuple) and not value
    if field.struct is not None:
        return isinstance(value, Mapping) and _struct_is_default(field.struct, value)
    return _scalar_equals(field.element, value, field.scalar_default)


def _scalar_equals(element: str, value: Any, default: Any) -> bool:
    if element == "bool":
        return isinstance(value, bool) and value == default
    if element in INTEGER_RANGES:
        return isinstance(value, int) and not isinstance(value, bool) and value == default
    if element == "float64":
        return isinstance(value, float | int) and not isinstance(value, bool) and value == default
    if element == "bytes":
        return isinstance(value, bytes | bytearray | memoryview) and bytes(value) == default
    return bool(value == default)  # string, uuid


def _struct_is_default(struct: StructSpec, value: Mapping[str, Any]) -> bool:
    if value.get(UNKNOWN_TAGGED_FIELDS):
        return False
    names = {field.name for field in struct.fields}
    if any(key not in names and key != UNKNOWN_TAGGED_FIELDS for key in value):
        return False
    return all(is_default(field, value[field.name]) for field in struct.fields if field.name in value)


def _schema(message: MessageSpec | str) -> MessageSpec:
    return message_schema(message) if isinstance(message, str) else message


# ---------------------------------------------------------------------------------------------------- encoding


def _write_struct(writer: Writer, struct: StructSpec, value: Any, version: int, flexible: bool) -> None:
    if not isinstance(value, Mapping):
        raise FieldProblem(f"a {struct.name} must be a dict, not {type(value).__name__}")
    if version not in struct.versions:
        raise FieldProblem(f"{struct.name} does not exist at version {version} (versions {struct.versions})")
    layout = layout_of(struct, version, flexible)
    unknown_keys = value.keys() - layout.names
    if unknown_keys:
        raise FieldProblem(f"{', '.join(sorted(map(str, unknown_keys)))}: no such field in {struct.name}")
    for field in layout.absent:
        if field.name in value and not field.ignorable and not is_default(field, value[field.name]):
            raise FieldProblem(
                f"a non-default value, but the field does not exist at version {version} "
                f"(versions {field.versions}) and is not ignorable"
            ).at(field.name)
    for slot in layout.untagged:
        field = slot.field
        item = value[field.name] if field.name in value else default_value(field)
        try:
            _write_field(writer, slot, item, version, flexible)
        except FieldProblem as problem:
            raise problem.at(field.name) from None
    raw_tags = _unknown_tags(value)
    if not flexible:
        if raw_tags:
            raise FieldProblem(f"tagged fields were set, but version {version} of {struct.name} has none")
        return
    entries: dict[int, bytes] = {}
    for slot in layout.tagged:
        field = slot.field
        if field.name in value and not is_default(field, value[field.name]):
            try:
                entries[field.tag or 0] = _tagged_payload(slot, value[field.name], version)
            except FieldProblem as problem:
                raise problem.at(field.name) from None
    for tag, payload in raw_tags.items():
        if tag in entries or tag in layout.by_tag:
            raise FieldProblem(f"unknown tagged field {tag} uses the tag of a known field").at(UNKNOWN_TAGGED_FIELDS)
        entries[tag] = payload
    writer.uvarint(len(entries))
    for tag in sorted(entries):
        payload = entries[tag]
        writer.uvarint(tag)
        writer.uvarint(len(payload))
        writer.raw(payload)


def _unknown_tags(value: Mapping[str, Any]) -> Mapping[int, bytes]:
    raw = value.get(UNKNOWN_TAGGED_FIELDS)
    if not raw:
        return {}
    if not isinstance(raw, Mapping) or not all(
        isinstance(tag, int) and tag >= 0 and isinstance(data, bytes | bytearray | memoryview)
        for tag, data in raw.items()
    ):
        raise FieldProblem("must be a dict from tag (int >= 0) to bytes").at(UNKNOWN_TAGGED_FIELDS)
    return raw


def _tagged_payload(slot: Slot, value: Any, version: int) -> bytes:
    """A tagged field's value as Kafka writes it after its tag and size (always in the flexible encoding)."""
    writer = Writer()
    field = slot.field
    if field.struct is not None and not field.is_array:
        if value is None:
            if not slot.nullable:
                raise FieldProblem(f"null, but the field is not nullable at version {version}")
            writer.uvarint(0)
            return bytes(writer.out)
        if slot.nullable:
            writer.uvarint(1)
        _write_struct(writer, field.struct, value, version, True)
    else:
        _write_field(writer, slot, value, version, True)
    return bytes(writer.out)


def _write_field(writer: Writer, slot: Slot, value: Any, version: int, flexible: bool) -> None:
    field = slot.field
    if field.is_array:
        if value is None:
            _write_null(writer, slot.nullable, slot.compact, version, INT32)
            return
        if not isinstance(value, list | tuple):
            raise FieldProblem(f"an array must be a list, not {type(value).__name__}")
        _write_length(writer, slot.compact, len(value), INT32)
        struct = field.struct
        for index, item in enumerate(value):
            try:
                if struct is not None:
                    _write_struct(writer, struct, item, version, flexible)
                else:
                    _write_scalar(writer, field.element, item, slot.compact, False, version)
            except FieldProblem as problem:
                raise problem.at(f"[{index}]") from None
    elif field.struct is not None:
        if value is None:
            if not slot.nullable:
                raise FieldProblem(f"null, but the field is not nullable at version {version}")
            writer.fixed(INT8, -1)
            return
        if slot.nullable:
            writer.fixed(INT8, 1)
        _write_struct(writer, field.struct, value, version, flexible)
    else:
        _write_scalar(writer, field.element, value, slot.compact, slot.nullable, version)


def _write_scalar(writer: Writer, element: str, value: Any, compact: bool, nullable: bool, version: int) -> None:
    codec = FIXED_CODECS.get(element)
    if codec is not None:
        if element == "float64":
            if not isinstance(value, float | int) or isinstance(value, bool):
                raise FieldProblem(f"a float64 must be a float, not {type(value).__name__}")
            writer.fixed(codec, float(value))
            return
        if not isinstance(value, int) or isinstance(value, bool):
            raise FieldProblem(f"an {element} must be an int, not {type(value).__name__}")
        low, high = INTEGER_RANGES[element]
        if not low <= value <= high:
            raise FieldProblem(f"{value} is out of range for {element} ({low} to {high})")
        writer.fixed(codec, value)
    elif element == "string":
        if value is None:
            _write_null(writer, nullable, compact, version, INT16)
            return
        if not isinstance(value, str):
            raise FieldProblem(f"a string must be a str, not {type(value).__name__}")
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise FieldProblem(f"not encodable as UTF-8: {error.reason}") from None
        if len(data) > MAX_STRING_BYTES:
            raise FieldProblem(f"a string of {len(data)} UTF-8 bytes is longer than Kafka's {MAX_STRING_BYTES}")
        _write_length(writer, compact, len(data), INT16)
        writer.raw(data)
    elif element in ("bytes", "records"):
        if value is None:
            _write_null(writer, nullable, compact, version, INT32)
            return
        if not isinstance(value, bytes | bytearray | memoryview):
            raise FieldProblem(f"{element} must be bytes, not {type(value).__name__}")
        data = bytes(value)
        _write_length(writer, compact, len(data), INT32)
        writer.raw(data)
    elif element == "bool":
        if not isinstance(value, bool):
            raise FieldProblem(f"a bool must be a bool, not {type(value).__name__}")
        writer.fixed(INT8, 1 if value else 0)
    elif element == "uuid":
        if not isinstance(value, uuid.UUID):
            raise FieldProblem(f"a uuid must be a uuid.UUID, not {type(value).__name__}")
        writer.raw(value.bytes)
    else:  # the model admits no other type
        raise FieldProblem(f"unknown type {element}")


def _write_null(writer: Writer, nullable: bool, compact: bool, version: int, legacy: Struct) -> None:
    if not nullable:
        raise FieldProblem(f"null, but the field is not nullable at version {version}")
    if compact:
        writer.uvarint(0)
    else:
        writer.fixed(legacy, -1)


def _write_length(writer: Writer, compact: bool, length: int, legacy: Struct) -> None:
    if length > MAX_ARRAY_LENGTH:
        raise FieldProblem(f"{length} is more than an int32 length can hold")
    if compact:
        writer.uvarint(length + 1)
    else:
        writer.fixed(legacy, length)


# ---------------------------------------------------------------------------------------------------- decoding


def _read_struct(reader: Reader, struct: StructSpec, version: int, flexible: bool) -> dict[str, Any]:
    if version not in struct.versions:
        raise FieldProblem(f"{struct.name} does not exist at version {version} (versions {struct.versions})")
    layout = layout_of(struct, version, flexible)
    result: dict[str, Any] = {}
    for field in struct.fields:
        result[field.name] = None  # keeps the schema's field order in the dict
    for slot in layout.untagged:
        try:
            result[slot.field.name] = _read_field(reader, slot, version, flexible)
        except FieldProblem as problem:
            raise problem.at(slot.field.name) from None
    for field in layout.absent:
        result[field.name] = default_value(field)
    for slot in layout.tagged:
        result[slot.field.name] = default_value(slot.field)
    if flexible:
        unknown = _read_tagged_fields(reader, layout, version, result)
        if unknown:
            result[UNKNOWN_TAGGED_FIELDS] = unknown
    return result


def _read_tagged_fields(reader: Reader, layout: Layout, version: int, result: dict[str, Any]) -> dict[int, bytes]:
    unknown: dict[int, bytes] = {}
    seen: set[int] = set()
    count = reader.uvarint("the count of tagged fields")
    for _ in range(count):
        tag = reader.uvarint("a tag")
        size = reader.uvarint(f"the size of tagged field {tag}")
        window = reader.window(size, f"tagged field {tag}")
        if tag in seen:
            raise FieldProblem(f"tagged field {tag} appears twice")
        seen.add(tag)
        slot = layout.by_tag.get(tag)
        if slot is not None:
            try:
                result[slot.field.name] = _read_tagged(window, slot, version)
                if window.remaining:
                    raise FieldProblem(f"the tagged value takes {size - window.remaining} of its {size} bytes")
            except FieldProblem as problem:
                raise problem.at(slot.field.name) from None
        elif tag in layout.absent_tags:
            name = layout.absent_tags[tag].name
            raise FieldProblem(f"tag {tag} ({name}) is not valid at version {version}")
        else:
            unknown[tag] = window.raw(size, f"tagged field {tag}")
    return unknown


def _read_tagged(reader: Reader, slot: Slot, version: int) -> Any:
    field = slot.field
    if field.struct is not None and not field.is_array:
        if slot.nullable and reader.uvarint("the null marker") == 0:
            return None
        return _read_struct(reader, field.struct, version, True)
    return _read_field(reader, slot, version, True)


def _read_field(reader: Reader, slot: Slot, version: int, flexible: bool) -> Any:
    field = slot.field
    if field.is_array:
        length = _read_length(reader, slot.compact, INT32, slot.nullable, version, "array")
        if length is None:
            return None
        if length > reader.remaining:
            left = reader.remaining
            raise FieldProblem(f"an array of {length} elements, but only {left} bytes are left in the frame")
        struct = field.struct
        items: list[Any] = []
        for index in range(length):
            try:
                if struct is not None:
                    items.append(_read_struct(reader, struct, version, flexible))
                else:
                    items.append(_read_scalar(reader, field.element, slot.compact, False, version))
            except FieldProblem as problem:
                raise problem.at(f"[{index}]") from None
        return items
    if field.struct is not None:
        if slot.nullable and reader.fixed(INT8, "the null marker") < 0:
            return None
        return _read_struct(reader, field.struct, version, flexible)
    return _read_scalar(reader, field.element, slot.compact, slot.nullable, version)


def _read_scalar(reader: Reader, element: str, compact: bool, nullable: bool, version: int) -> Any:
    codec = FIXED_CODECS.get(element)
    if codec is not None:
        return reader.fixed(codec, element)
    if element == "string":
        length = _read_length(reader, compact, INT16, nullable, version, "string")
        if length is None:
            return None
        if length > MAX_STRING_BYTES:
            raise FieldProblem(f"a string length of {length} is more than Kafka's {MAX_STRING_BYTES}")
        if length > reader.remaining:
            raise FieldProblem(f"a string of {length} bytes, but only {reader.remaining} bytes are left in the frame")
        try:
            return reader.raw(length, "string").decode("utf-8")
        except UnicodeDecodeError as error:
            raise FieldProblem(f"the string is not UTF-8: {error.reason}") from None
    if element in ("bytes", "records"):
        length = _read_length(reader, compact, INT32, nullable, version, element)
        if length is None:
            return None
        if length > reader.remaining:
            raise FieldProblem(f"{element} of {length} bytes, but only {reader.remaining} bytes are left in the frame")
        return reader.raw(length, element)
    if element == "bool":
        return reader.fixed(INT8, "bool") != 0
    if element == "uuid":
        return reader.uuid()
    raise FieldProblem(f"unknown type {element}")  # the model admits no other type


def _read_length(reader: Reader, compact: bool, legacy: Struct, nullable: bool, version: int, what: str) -> int | None:
    """A length prefix: None for null (where the field is nullable), else the length."""
    name = f"the {what} length"
    length = reader.uvarint(name) - 1 if compact else int(reader.fixed(legacy, name))
    if length >= 0:
        return length
    if length != -1:
        raise FieldProblem(f"negative {what} length {length} (only -1, null, may be negative)")
    if not nullable:
        raise FieldProblem(f"null (length -1), but the field is not nullable at version {version}")
    return None
