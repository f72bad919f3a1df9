"""Kafka's version ranges as its schemas write them: ``"0+"``, ``"3-7"``, ``"5"``, ``"none"``."""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.protocol.schemas.errors import SchemaFormatError

HIGHEST_VERSION = 32767
"""What ``"N+"`` reaches: the largest int16, as in Kafka's ``Versions``."""


@dataclass(frozen=True)
class Versions:
    """An inclusive range of versions; empty (``none``) when ``lowest > highest``."""

    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Read a schema's range text: ``"none"``, ``"N"``, ``"N+"`` or ``"A-B"``."""
        spec = text.strip()
        try:
            if spec == "none":
                return NO_VERSIONS
            if spec.endswith("+"):
                return cls(int(spec[:-1]), HIGHEST_VERSION)
            if "-" in spec:
                low, high = spec.split("-", 1)
                return cls(int(low), int(high))
            return cls(int(spec), int(spec))
        except ValueError:
            raise SchemaFormatError(f"not a version range: {text!r}") from None

    @property
    def empty(self) -> bool:
        """True for ``none``: no version at all."""
        return self.lowest > self.highest

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    def covers(self, other: Versions) -> bool:
        """True when every version of ``other`` is in this range (an empty ``other`` is always covered)."""
        return other.empty or (self.lowest <= other.lowest and other.highest <= self.highest)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == HIGHEST_VERSION:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NO_VERSIONS = Versions(0, -1)
"""The empty range, ``"none"``."""
