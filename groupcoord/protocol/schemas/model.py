"""The schema model: a Kafka message schema (one ``common/message/*.json`` of the kafka-clients jar) as frozen values.

A message has a name, a kind (request, response, header or data), an API key for requests and responses, its valid
and flexible versions, and a top-level struct. A struct is a list of fields; a field has a type (a primitive, a
struct, or an array ``[]T`` of either), the versions it is present in, the versions it may be null in, and, when it
is tagged, its tag and tagged versions. Structs are written inline (a field with ``fields``) or once in the
message's ``commonStructs`` and named by type. ``entityType``, ``about`` texts and ``zeroCopy`` change nothing on the
wire; ``mapKey`` only changes Kafka's Java collection type (values here are lists either way).

Defaults follow Kafka's generator: a number defaults to 0, a bool to false, a string to ``""``, bytes to empty, a
uuid to the zero uuid, an array to empty, a struct to a struct of defaults, records to null; a ``default`` overrides
(``"null"`` only where every version of the field is nullable, integers also in ``0x`` hex).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, cast, get_args

from groupcoord.protocol.schemas.errors import SchemaFormatError
from groupcoord.protocol.schemas.versions import Versions

MessageKind = Literal["request", "response", "header", "data"]
"""What a schema describes: an API's request or response body, a request or response header, or a data format."""

INTEGER_RANGES: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "int8": (-(2**7), 2**7 - 1),
        "int16": (-(2**15), 2**15 - 1),
        "uint16": (0, 2**16 - 1),
        "int32": (-(2**31), 2**31 - 1),
        "uint32": (0, 2**32 - 1),
        "int64": (-(2**63), 2**63 - 1),
    }
)
"""The integer types and their inclusive value ranges."""

PRIMITIVE_TYPES = frozenset({*INTEGER_RANGES, "bool", "float64", "string", "bytes", "uuid", "records"})
"""Every type that is not a struct."""

ZERO_UUID = uuid.UUID(int=0)
"""The default of a uuid field (Kafka's ``Uuid.ZERO_UUID``)."""


@dataclass(frozen=True, eq=False)
class StructSpec:
    """A struct: its name, the versions it exists in, and its fields in wire order."""

    name: str
    versions: Versions
    fields: tuple[FieldSpec, ...]

    def field(self, name: str) -> FieldSpec:
        """The field called ``name`` (KeyError when there is none)."""
        for spec in self.fields:
            if spec.name == name:
                return spec
        raise KeyError(f"{self.name} has no field {name}")


@dataclass(frozen=True, eq=False)
class FieldSpec:
    """One field of a struct.

    ``type`` is the type as written (``"int32"``, ``"[]string"``, ``"[]TopicPartitions"``, ``"Assignment"``);
    ``element`` is the type of one element for an array and the type itself otherwise, and ``struct`` the resolved
    struct of a struct or struct-array field. ``default`` is the default as Kafka's generator reads it (``""`` when
    the schema gives none); :func:`default_value` turns it into a Python value. ``flexible_versions`` overrides the
    message's flexible versions for this field's length prefixes (only RequestHeader's ClientId uses it: ``none``).
    """

    name: str
    type: str
    is_array: bool
    element: str
    struct: StructSpec | None
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    default: str
    ignorable: bool
    map_key: bool
    flexible_versions: Versions | None
    about: str
    scalar_default: Any
    """The default of a primitive, non-array field as a Python value (immutable); None for the others."""


@dataclass(frozen=True, eq=False)
class MessageSpec:
    """One message schema. ``struct`` holds the top-level fields; its versions are the message's valid versions."""

    name: str
    kind: MessageKind
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    latest_version_unstable: bool
    struct: StructSpec
    common_structs: Mapping[str, StructSpec]

    @property
    def fields(self) -> tuple[FieldSpec, ...]:
        """The top-level fields."""
        return self.struct.fields


def default_value(field: FieldSpec) -> Any:
    """A fresh Python value of the field's default (a new list or dict each call, so callers may change it)."""
    if field.default == "null":
        return None
    if field.is_array:
        return []
    if field.struct is not None:
        return struct_default(field.struct)
    return field.scalar_default


def struct_default(struct: StructSpec) -> dict[str, Any]:
    """A struct holding every field's default (Kafka's ``new Struct()``)."""
    return {field.name: default_value(field) for field in struct.fields}


def parse_message(document: Mapping[str, Any]) -> MessageSpec:
    """Build a :class:`MessageSpec` from one schema file's parsed JSON (comments already stripped)."""
    name = _text(document, "name", "the message")
    kind_text = _text(document, "type", name)
    if kind_text not in get_args(MessageKind):
        raise SchemaFormatError(f"{name}: unknown message type {kind_text!r}")
    kind = cast(MessageKind, kind_text)
    valid = Versions.parse(_text(document, "validVersions", name))
    flexible = Versions.parse(str(document.get("flexibleVersions", "none")))
    api_key = document.get("apiKey")
    if kind in ("request", "response") and not isinstance(api_key, int):
        raise SchemaFormatError(f"{name}: a {kind} needs an integer apiKey")
    parser = _StructParser(name, document.get("commonStructs", ()))
    top = StructSpec(name, valid, parser.fields(document.get("fields", ()), name))
    return MessageSpec(
        name=name,
        kind=kind,
        api_key=api_key if isinstance(api_key, int) else None,
        valid_versions=valid,
        flexible_versions=flexible,
        latest_version_unstable=bool(document.get("latestVersionUnstable", False)),
        struct=top,
        common_structs=MappingProxyType(parser.common()),
    )


def _text(document: Mapping[str, Any], key: str, owner: str) -> str:
    value = document.get(key)
    if not isinstance(value, str):
        raise SchemaFormatError(f"{owner}: missing or non-text {key!r}")
    return value


class _StructParser:
    """Parses one message's fields, resolving struct types against the message's ``commonStructs``."""

    def __init__(self, message: str, common: Any) -> None:
        self._message = message
        self._common_raw: dict[str, Mapping[str, Any]] = {}
        for entry in common:
            self._common_raw[_text(entry, "name", f"{message} commonStructs")] = entry
        self._common: dict[str, StructSpec] = {}
        self._resolving: set[str] = set()

    def common(self) -> dict[str, StructSpec]:
        """Every common struct, parsed (those no field names too)."""
        for name in self._common_raw:
            self._common_struct(name)
        return dict(self._common)

    def fields(self, raw_fields: Any, owner: str) -> tuple[FieldSpec, ...]:
        """Parse the ``fields`` list of ``owner``."""
        parsed = tuple(self._field(raw, owner) for raw in raw_fields)
        seen_tags: set[int] = set()
        for spec in parsed:
            if spec.tag is not None:
                if spec.tag in seen_tags:
                    raise SchemaFormatError(f"{self._message}: {owner} uses tag {spec.tag} twice")
                seen_tags.add(spec.tag)
        return parsed

    def _common_struct(self, name: str) -> StructSpec:
        if name in self._common:
            return self._common[name]
        if name in self._resolving:
            raise SchemaFormatError(f"{self._message}: common struct {name} contains itself")
        raw = self._common_raw[name]
        self._resolving.add(name)
        versions = Versions.parse(_text(raw, "versions", f"{self._message}.{name}"))
        struct = StructSpec(name, versions, self.fields(raw.get("fields", ()), name))
        self._resolving.discard(name)
        self._common[name] = struct
        return struct

    def _field(self, raw: Mapping[str, Any], owner: str) -> FieldSpec:
        name = _text(raw, "name", f"{self._message}.{owner}")
        where = f"{self._message}.{owner}.{name}"
        type_text = _text(raw, "type", where)
        tagged = Versions.parse(str(raw.get("taggedVersions", "none")))
        versions_text = raw.get("versions")
        if versions_text is None and not tagged.empty:
            versions = tagged  # Kafka: a tagged field without versions exists in its tagged versions
        else:
            versions = Versions.parse(_text(raw, "versions", where))
        tag = raw.get("tag")
        if (tag is None) != tagged.empty or (tag is not None and not isinstance(tag, int)):
            raise SchemaFormatError(f"{where}: a tagged field needs both an integer tag and taggedVersions")
        is_array = type_text.startswith("[]")
        element = type_text[2:] if is_array else type_text
        struct = self._struct_of(element, raw, versions, where)
        if struct is None and "fields" in raw:
            raise SchemaFormatError(f"{where}: a {type_text} field cannot have fields")
        nullable = Versions.parse(str(raw.get("nullableVersions", "none")))
        default = _default_text(raw.get("default", ""))
        if default == "null" and not nullable.covers(versions):
            raise SchemaFormatError(f"{where}: null is the default, but not every version is nullable")
        flexible_text = raw.get("flexibleVersions")
        return FieldSpec(
            name=name,
            type=type_text,
            is_array=is_array,
            element=element,
            struct=struct,
            versions=versions,
            nullable_versions=nullable,
            tagged_versions=tagged,
            tag=tag,
            default=default,
            ignorable=bool(raw.get("ignorable", False)),
            map_key=bool(raw.get("mapKey", False)),
            flexible_versions=None if flexible_text is None else Versions.parse(str(flexible_text)),
            about=str(raw.get("about", "")),
            scalar_default=None if is_array or struct is not None else _scalar_default(element, default, where),
        )

    def _struct_of(self, element: str, raw: Mapping[str, Any], versions: Versions, where: str) -> StructSpec | None:
        if element in PRIMITIVE_TYPES:
            return None
        if not element[:1].isupper():
            raise SchemaFormatError(f"{where}: unknown type {element!r}")
        if "fields" in raw:
            return StructSpec(element, versions, self.fields(raw["fields"], element))
        if element in self._common_raw:
            return self._common_struct(element)
        raise SchemaFormatError(f"{where}: struct type {element} is neither inline nor a common struct")


def _default_text(value: Any) -> str:
    """The default as Kafka's generator sees it: JSON numbers and booleans read as their text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _scalar_default(element: str, text: str, where: str) -> Any:
    """The Python default of a primitive field, checked as Kafka's generator checks it."""
    try:
        if element in INTEGER_RANGES:
            if not text:
                return 0
            number = int(text[2:], 16) if text.startswith("0x") else int(text, 10)
            low, high = INTEGER_RANGES[element]
            if not low <= number <= high:
                raise ValueError(f"{number} is out of range")
            return number
        if element == "bool":
            if text.lower() not in ("", "true", "false"):
                raise ValueError("not true or false")
            return text.lower() == "true"
        if element == "float64":
            return float(text) if text else 0.0
        if element == "uuid":
            return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")) if text else ZERO_UUID
        if element == "string":
            return None if text == "null" else text
        if element == "bytes":
            if text not in ("", "null"):
                raise ValueError("bytes default only to empty or null")
            return None if text == "null" else b""
        if element == "records":
            return None
    except (ValueError, binascii.Error) as error:
        raise SchemaFormatError(f"{where}: invalid default {text!r} for {element}: {error}") from None
    raise SchemaFormatError(f"{where}: unknown type {element!r}")
