"""A member's view of the group generation it belongs to: a value object with a ``NO_GENERATION`` sentinel."""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN_MEMBER_ID = ""
"""The member id of a member that has never joined (or whose id was reset)."""

NO_GENERATION_ID = -1
"""The generation id of a member outside any generation."""


@dataclass(frozen=True)
class Generation:
    """The generation id, this member's id in it, and the protocol the group selected."""

    generation_id: int
    member_id: str
    protocol: str | None

    @property
    def is_valid(self) -> bool:
        """True once a JoinGroup made this member part of a generation."""
        return self.generation_id != NO_GENERATION_ID

    def lost(self) -> Generation:
        """The generation after ILLEGAL_GENERATION: no generation, but the member id is kept for the rejoin."""
        return Generation(NO_GENERATION_ID, self.member_id, None)


NO_GENERATION = Generation(NO_GENERATION_ID, UNKNOWN_MEMBER_ID, None)
"""Not joined, no member id."""
