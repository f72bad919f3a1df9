"""A struct's fields at one version, in the order and the form the wire carries them: what both readers (the
interpretive one of :mod:`~groupcoord.protocol.schemas.codec` and the generated one of
:mod:`~groupcoord.protocol.schemas.generated_reader`) and the writer walk."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.protocol.schemas.model import FieldSpec, StructSpec

UNKNOWN_TAGGED_FIELDS = "_unknownTaggedFields"
"""The key under which a decoded struct keeps the tagged fields its schema does not know: ``{tag: raw bytes}``."""


@dataclass(frozen=True)
class Slot:
    """One field at one version: how it is carried (``compact``: lengths as compact unsigned varints)."""

    field: FieldSpec
    tagged: bool
    compact: bool
    nullable: bool


@dataclass(frozen=True)
class Layout:
    """A struct at one version: its fields in wire order, its tagged fields by tag, the fields absent there."""

    untagged: tuple[Slot, ...]
    tagged: tuple[Slot, ...]
    by_tag: Mapping[int, Slot]
    absent_tags: Mapping[int, FieldSpec]
    absent: tuple[FieldSpec, ...]
    names: frozenset[str]


@functools.cache
def layout(struct: StructSpec, version: int, flexible: bool) -> Layout:
    """``struct`` at ``version`` (``flexible``: the message's flexible versions include it), computed once."""
    present: list[Slot] = []
    absent: list[FieldSpec] = []
    for field in struct.fields:
        if version not in field.versions:
            absent.append(field)
            continue
        compact = version in field.flexible_versions if field.flexible_versions is not None else flexible
        tagged = version in field.tagged_versions
        present.append(Slot(field, tagged, compact or tagged, version in field.nullable_versions))
    tagged_slots = sorted((slot for slot in present if slot.tagged), key=lambda slot: slot.field.tag or 0)
    return Layout(
        untagged=tuple(slot for slot in present if not slot.tagged),
        tagged=tuple(tagged_slots),
        by_tag={slot.field.tag: slot for slot in tagged_slots if slot.field.tag is not None},
        absent_tags={field.tag: field for field in absent if field.tag is not None},
        absent=tuple(absent),
        names=frozenset(field.name for field in struct.fields) | {UNKNOWN_TAGGED_FIELDS},
    )
