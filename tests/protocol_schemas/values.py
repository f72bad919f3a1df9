"""Deterministic sample values for any message schema at any version.

Every field present at the version gets a value other than its default (so tagged fields are written and a field
the codec dropped would show), drawn from one running counter: the same schema and version give the same value on
every run. Nested structs and arrays are filled too (two elements, one below depth 3); a nullable field is null
every fourth draw; strings are sometimes non-ASCII, so UTF-8 lengths differ from character counts. Fields absent at
the version hold their default, which is what decoding gives back.
"""

from __future__ import annotations

import uuid
from typing import Any

from groupcoord.protocol.schemas.model import INTEGER_RANGES, FieldSpec, MessageSpec, StructSpec, default_value

SIGNED = frozenset({"int8", "int16", "int32", "int64"})


class SampleValues:
    """Draws values; one instance per message keeps the draws of different messages independent."""

    def __init__(self, seed: int = 0) -> None:
        self._counter = seed

    def message(self, spec: MessageSpec, version: int) -> dict[str, Any]:
        """A value of the whole message at ``version``."""
        return self.struct(spec.struct, version, depth=0)

    def struct(self, struct: StructSpec, version: int, depth: int) -> dict[str, Any]:
        """A value of ``struct``: every present field drawn, every absent one at its default."""
        return {
            field.name: self.field(field, version, depth) if version in field.versions else default_value(field)
            for field in struct.fields
        }

    def field(self, field: FieldSpec, version: int, depth: int) -> Any:
        """A value of one present field."""
        self._counter += 1
        draw = self._counter
        if version in field.nullable_versions and draw % 4 == 0:
            return None
        if field.is_array:
            count = 2 if depth < 3 else 1
            if field.struct is not None:
                return [self.struct(field.struct, version, depth + 1) for _ in range(count)]
            return [self.scalar(field.element, draw + index, None) for index in range(count + 1)]
        if field.struct is not None:
            return self.struct(field.struct, version, depth + 1)
        return self.scalar(field.element, draw, field.scalar_default)

    @staticmethod
    def scalar(element: str, draw: int, default: Any) -> Any:
        """A primitive value from ``draw``, never equal to ``default``."""
        if element in INTEGER_RANGES:
            low, high = INTEGER_RANGES[element]
            number = (draw * 37) % 100 + 1
            if element in ("int64", "uint32"):
                number = number * 1_000_003 if element == "uint32" else number * 10**12 + draw
            if element in SIGNED and draw % 5 == 0:
                number = -number
            if number == default:
                number += 1
            return max(low, min(high, number))
        if element == "bool":
            return not default
        if element == "float64":
            return draw + 0.25
        if element == "string":
            return f"s{draw}-\u00e9\u4e2d" if draw % 3 == 0 else f"s{draw}"
        if element in ("bytes", "records"):
            return bytes((draw + index) % 256 for index in range(draw % 7 + 1))
        if element == "uuid":
            return uuid.UUID(int=draw * 0x0001_0000_0000_0001 + 1)
        raise ValueError(f"unknown type {element}")


def regular(struct: StructSpec, version: int, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` in the generated writer's regular form: only the untagged fields present at ``version``, at any
    depth (what the interpretive writer writes for ``value`` when its other fields hold their defaults)."""
    result: dict[str, Any] = {}
    for field in struct.fields:
        if version not in field.versions or version in field.tagged_versions:
            continue
        item = value[field.name]
        if field.struct is not None and item is not None:
            item = ([regular(field.struct, version, element) for element in item] if field.is_array
                    else regular(field.struct, version, item))
        result[field.name] = item
    return result


def tagged_at_default(struct: StructSpec, version: int, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with every tagged field, at any depth, back at its default."""
    result: dict[str, Any] = {}
    for field in struct.fields:
        item = value[field.name]
        if version in field.versions and version in field.tagged_versions:
            item = default_value(field)
        elif field.struct is not None and item is not None:
            item = ([tagged_at_default(field.struct, version, element) for element in item] if field.is_array
                    else tagged_at_default(field.struct, version, item))
        result[field.name] = item
    return result
