"""Kafka principals (``User:NAME``) and Kafka's ``ssl.principal.mapping.rules`` for client certificates.

A rule list is Kafka's syntax: comma-separated ``DEFAULT`` or ``RULE:pattern/replacement/[LU]``, tried in order;
the first rule whose pattern matches the whole distinguished name gives the name (lower- or upper-cased with
``L``/``U``), and ``DEFAULT`` gives the distinguished name itself. No rule matching is an error, as in Kafka.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

USER_TYPE = "User"
ANONYMOUS = "User:ANONYMOUS"
"""The principal of every connection of a PLAINTEXT listener (and of SSL without a client certificate)."""


def user_principal(name: str) -> str:
    """``User:NAME``."""
    return f"{USER_TYPE}:{name}"


class PrincipalMappingError(ValueError):
    """A rule list that does not parse, or a distinguished name no rule maps."""


@dataclass(frozen=True)
class MappingRule:
    """One rule: ``DEFAULT`` (``pattern is None``) or a pattern, its replacement and a case flag."""

    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    case: str = ""

    def apply(self, distinguished_name: str) -> str | None:
        """The name this rule gives ``distinguished_name``, ``None`` when it does not match."""
        if self.pattern is None:
            return distinguished_name
        match = self.pattern.fullmatch(distinguished_name)
        if match is None:
            return None
        name = match.expand(_java_replacement(self.replacement))
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


def _java_replacement(replacement: str) -> str:
    r"""Java's ``$1`` group references in Python's ``\g<1>`` form."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", replacement.replace("\\", "\\\\"))


_RULE = re.compile(r"\s*RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?)\s*(?:,|$)|\s*DEFAULT\s*(?:,|$)")


def parse_mapping_rules(rules: str) -> tuple[MappingRule, ...]:
    """Parse Kafka's ``ssl.principal.mapping.rules``; raises :class:`PrincipalMappingError`."""
    parsed: list[MappingRule] = []
    position = 0
    text = rules.strip()
    while position < len(text):
        match = _RULE.match(text, position)
        if match is None or match.end() == position:
            raise PrincipalMappingError(f"invalid ssl.principal.mapping.rules at {text[position:]!r}")
        if match.group(0).strip().startswith("DEFAULT"):
            parsed.append(MappingRule())
        else:
            try:
                pattern = re.compile(match.group(1).replace("\\/", "/"))
            except re.error as exc:
                raise PrincipalMappingError(f"invalid pattern in ssl.principal.mapping.rules: {exc}") from None
            parsed.append(MappingRule(pattern, match.group(2).replace("\\/", "/"), match.group(3)))
        position = match.end()
    return tuple(parsed) or (MappingRule(),)


def map_distinguished_name(rules: tuple[MappingRule, ...], distinguished_name: str) -> str:
    """The principal name of a certificate's subject under ``rules``."""
    for rule in rules:
        name = rule.apply(distinguished_name)
        if name is not None:
            return name
    raise PrincipalMappingError(f"no ssl.principal.mapping.rules rule matches {distinguished_name!r}")
