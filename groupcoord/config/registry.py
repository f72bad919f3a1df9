"""The key registry: name, type, default, documentation and validation of each ``spark.groupcoord.*`` key.

Keys are declared in :mod:`groupcoord.config.keys`; this module holds the machinery.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

PREFIX = "spark.groupcoord."

ValueType = type[int] | type[float] | type[str] | type[bool]


class ConfigError(ValueError):
    """A configuration key or value is wrong; the message is one line meant for a user."""


def full_name(name: str) -> str:
    """Return ``name`` with the ``spark.groupcoord.`` prefix."""
    return name if name.startswith(PREFIX) else PREFIX + name


def short_name(name: str) -> str:
    """Return ``name`` without the ``spark.groupcoord.`` prefix."""
    return name[len(PREFIX) :] if name.startswith(PREFIX) else name


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key.

    ``name`` is the short name (``group.max.size``); :attr:`full_name` adds the prefix. ``default`` of ``None``
    means "unset". ``minimum``/``maximum``/``choices`` are checked by :meth:`parse`.
    """

    name: str
    type: ValueType
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], str | None] | None = field(default=None, compare=False)

    @property
    def full_name(self) -> str:
        """The key as Spark sees it: ``spark.groupcoord.<name>``."""
        return PREFIX + self.name

    def parse(self, raw: Any) -> Any:
        """Convert ``raw`` (often a string) to this key's type and validate it, or raise :class:`ConfigError`."""
        value = self._convert(raw)
        if value is None:
            return None
        problem = self._problem(value)
        if problem:
            raise ConfigError(f"{self.full_name}={raw!r}: {problem}")
        return value

    def _convert(self, raw: Any) -> Any:
        if raw is None:
            return None
        if self.type is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise ConfigError(f"{self.full_name}={raw!r}: expected true or false")
        try:
            if self.type is int:
                if isinstance(raw, float) and not raw.is_integer():
                    raise ValueError
                return int(str(raw).strip()) if not isinstance(raw, int | float) else int(raw)
            if self.type is float:
                return float(raw)
        except ValueError:
            raise ConfigError(
                f"{self.full_name}={raw!r}: expected {'an integer' if self.type is int else 'a number'}"
            ) from None
        return str(raw)

    def _problem(self, value: Any) -> str | None:
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {_fmt(self.minimum)}"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {_fmt(self.maximum)}"
        if self.choices is not None and value not in self.choices:
            return f"must be one of {', '.join(self.choices)}"
        if self.check is not None:
            return self.check(value)
        return None


def _fmt(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


class Registry:
    """An ordered collection of :class:`ConfigKey`, looked up by short or full name."""

    def __init__(self) -> None:
        self._keys: dict[str, ConfigKey] = {}

    def add(self, key: ConfigKey) -> ConfigKey:
        """Register ``key``; a second key with the same name is a programming error."""
        if key.name in self._keys:
            raise ValueError(f"duplicate config key {key.full_name}")
        self._keys[key.name] = key
        return key

    def define(self, name: str, type_: ValueType, default: Any, doc: str, **checks: Any) -> ConfigKey:
        """Declare a key; keyword ``checks`` are :class:`ConfigKey` fields (``minimum``, ``choices``...)."""
        return self.add(ConfigKey(name, type_, default, doc, **checks))

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self._keys.values())

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and short_name(name) in self._keys

    def get(self, name: str) -> ConfigKey:
        """Return the key called ``name`` (short or full), or raise :class:`ConfigError` naming the closest key."""
        key = self._keys.get(short_name(name))
        if key is None:
            close = difflib.get_close_matches(short_name(name), list(self._keys), n=1, cutoff=0.0)
            hint = f"; did you mean {PREFIX}{close[0]}?" if close else ""
            raise ConfigError(f"unknown configuration key {full_name(name)}{hint}")
        return key


REGISTRY = Registry()
"""The one registry; :mod:`groupcoord.config.keys` fills it on import."""
