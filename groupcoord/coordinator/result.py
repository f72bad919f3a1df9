"""What every coordinator entry point returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groupcoord.coordinator.effects import Effect
from groupcoord.coordinator.records import Record, chunks_of, records_of
from groupcoord.group.member import Token
from groupcoord.protocol.responses import GroupResponse


@dataclass(frozen=True)
class CoordinatorResult:
    """Records to persist (already replayed into the coordinator), responses to send once those records are
    durable, each tagged with its request's token, and effects for the shell.

    ``records`` is a tuple, or, when a commit wrote blocks of offsets, a
    :class:`~groupcoord.coordinator.records.Records` (the same records to every reader; its ``chunks`` keep the
    blocks for the columnar paths)."""

    records: Sequence[Record] = ()
    responses: tuple[tuple[Token, GroupResponse], ...] = ()
    effects: tuple[Effect, ...] = ()

    def merged(self, other: CoordinatorResult) -> CoordinatorResult:
        """This result followed by ``other``."""
        return CoordinatorResult(records_of((*chunks_of(self.records), *chunks_of(other.records))),
                                 self.responses + other.responses,
                                 self.effects + other.effects)

    def response_for(self, token: Token) -> GroupResponse | None:
        """The response tagged ``token``, if this result has one."""
        return next((response for t, response in self.responses if t == token), None)
