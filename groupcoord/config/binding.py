"""Frozen config dataclasses built from the key registry: each field names its ``spark.groupcoord.*`` key.

A layer declares its settings once, on the dataclass::

    @dataclass(frozen=True, kw_only=True)
    class LogConfig(KeyedConfig):
        linger_ms: int = field(default=5, metadata=from_key("log.linger.ms"))
        retention_ms: int = field(default=..., metadata=from_key("retention.minutes", convert=minutes_to_ms))

and ``LogConfig.from_config(config)`` reads every bound field from the resolved configuration (the registry
defaults when ``config`` is ``None``). Fields without a key keep their dataclass default. Unit conversions are
explicit ``convert`` functions on the field, never guessed from names. A misspelt key fails at import, when the
class is defined, not at the first read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Self, TypeVar

from groupcoord.config.registry import REGISTRY
from groupcoord.config.resolve import Config, resolve_config

_METADATA_KEY = "groupcoord.config.binding"

_T = TypeVar("_T")


@dataclass(frozen=True)
class KeyBinding:
    """The registry key a dataclass field is read from, and how its value is converted for the field."""

    key: str
    convert: Callable[[Any], Any] | None = None

    def read(self, config: Config) -> Any:
        """The field's value in ``config``."""
        value = config[self.key]
        return self.convert(value) if self.convert is not None else value


def from_key(key: str, *, convert: Callable[[Any], Any] | None = None) -> Mapping[str, KeyBinding]:
    """Field metadata binding a dataclass field to registry key ``key`` (``field(..., metadata=from_key(k))``)."""
    REGISTRY.get(key)  # raises ConfigError for an unknown key, so a typo cannot hide until the first read
    return {_METADATA_KEY: KeyBinding(key, convert)}


def bindings(cls: type) -> dict[str, KeyBinding]:
    """Field name -> key binding of every bound field of dataclass ``cls``."""
    return {f.name: f.metadata[_METADATA_KEY] for f in fields(cls) if _METADATA_KEY in f.metadata}


def build_from_keys(cls: type[_T], config: Config | None = None, **values: Any) -> _T:
    """An instance of dataclass ``cls`` with every bound field read from ``config``; ``values`` set the others."""
    resolved = config if config is not None else resolve_config()
    read = {name: binding.read(resolved) for name, binding in bindings(cls).items() if name not in values}
    return cls(**read, **values)


class KeyedConfig:
    """Mixin for frozen config dataclasses whose fields carry :func:`from_key` metadata."""

    @classmethod
    def from_config(cls, config: Config | None = None) -> Self:
        """Read every bound field from ``config`` (the registry defaults when ``None``)."""
        return build_from_keys(cls, config)


def minutes_to_ms(minutes: int) -> int:
    """A ``*.minutes`` key for a ``*_ms`` field."""
    return minutes * 60 * 1000


def split_list(value: str) -> tuple[str, ...]:
    """A comma-separated key as a tuple of stripped names (``"a, b"`` -> ``("a", "b")``)."""
    return tuple(item.strip() for item in value.split(","))


def split_list_or_none(value: str | None) -> tuple[str, ...] | None:
    """:func:`split_list`, with an unset or empty key staying ``None``."""
    return split_list(value) if value else None
