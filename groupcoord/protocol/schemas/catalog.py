"""Finding a schema: by message name, by API key and kind, and each API's valid versions."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from groupcoord.protocol.schemas.errors import CodecError
from groupcoord.protocol.schemas.loader import load_schemas
from groupcoord.protocol.schemas.model import MessageSpec

ApiKind = Literal["request", "response"]
"""The two schemas of an API."""


@dataclass(frozen=True)
class ApiVersionRange:
    """The versions of one API that Kafka's schemas define (what an ApiVersions response would list in full).

    ``latest_version_unstable`` is Kafka's flag for a newest version still under development, which a broker only
    advertises when told to.
    """

    api_key: int
    name: str
    min_version: int
    max_version: int
    latest_version_unstable: bool


def message_schema(name: str) -> MessageSpec:
    """The schema called ``name`` (``JoinGroupRequest``, ``RequestHeader``, ``ConsumerProtocolSubscription``)."""
    schema = load_schemas().get(name)
    if schema is None:
        raise CodecError(name, None, None, "no schema of that name in Kafka's message schemas")
    return schema


def schema_for(api_key: int, kind: ApiKind) -> MessageSpec:
    """The request or response schema of API ``api_key``; a :class:`CodecError` for an unknown key."""
    schema = _by_api_key().get((api_key, kind))
    if schema is None:
        raise CodecError(f"API key {api_key}", None, None, f"unknown API key: Kafka's schemas have no {kind} for it")
    return schema


def api_versions() -> Mapping[int, ApiVersionRange]:
    """Every API with at least one valid version, by API key, in key order (APIs whose schemas say ``none``, such
    as ControlledShutdown since Kafka 4.0, are left out)."""
    return _api_versions()


@functools.cache
def _by_api_key() -> Mapping[tuple[int, str], MessageSpec]:
    return MappingProxyType(
        {(spec.api_key, spec.kind): spec for spec in load_schemas().values() if spec.api_key is not None}
    )


@functools.cache
def _api_versions() -> Mapping[int, ApiVersionRange]:
    ranges: dict[int, ApiVersionRange] = {}
    for (api_key, kind), spec in sorted(_by_api_key().items()):
        if kind != "request" or spec.valid_versions.empty:
            continue
        ranges[api_key] = ApiVersionRange(
            api_key=api_key,
            name=spec.name.removesuffix("Request"),
            min_version=spec.valid_versions.lowest,
            max_version=spec.valid_versions.highest,
            latest_version_unstable=spec.latest_version_unstable,
        )
    return MappingProxyType(ranges)
