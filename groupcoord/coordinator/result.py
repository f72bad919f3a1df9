"""What every coordinator entry point returns."""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.coordinator.effects import Effect
from groupcoord.coordinator.records import Record
from groupcoord.group.member import Token
from groupcoord.protocol.responses import GroupResponse


@dataclass(frozen=True)
class CoordinatorResult:
    """Records to persist (already replayed into the coordinator), responses to send once those records are
    durable, each tagged with its request's token, and effects for the shell."""

    records: tuple[Record, ...] = ()
    responses: tuple[tuple[Token, GroupResponse], ...] = ()
    effects: tuple[Effect, ...] = ()

    def merged(self, other: CoordinatorResult) -> CoordinatorResult:
        """This result followed by ``other``."""
        return CoordinatorResult(self.records + other.records, self.responses + other.responses,
                                 self.effects + other.effects)

    def response_for(self, token: Token) -> GroupResponse | None:
        """The response tagged ``token``, if this result has one."""
        return next((response for t, response in self.responses if t == token), None)
