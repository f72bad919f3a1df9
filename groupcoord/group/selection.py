"""Protocol selection: the candidates every member supports, and a vote among them (seed 004, rolling upgrades).

Each member votes for the first protocol in its own preference order that is a candidate; the most votes win.
Ties go to the protocol that comes first in the earliest member's list, so the choice is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence


def candidate_protocols(preferences: Sequence[Sequence[str]]) -> list[str]:
    """Protocols supported by every member, in the first member's order. Empty when there are no members."""
    if not preferences:
        return []
    common = set(preferences[0]).intersection(*map(set, preferences[1:]))
    return [name for name in preferences[0] if name in common]


def select_protocol(preferences: Sequence[Sequence[str]]) -> str:
    """The protocol the group uses next; raises ``ValueError`` when the members share none.

    Example: members preferring ``[range, roundrobin]``, ``[roundrobin, range]`` and ``[range]`` have the
    candidates ``[range]`` (only ``range`` is common), so every member votes ``range``.
    """
    candidates = candidate_protocols(preferences)
    if not candidates:
        raise ValueError("the members support no common protocol")
    votes = dict.fromkeys(candidates, 0)
    for member_preferences in preferences:
        vote = next(name for name in member_preferences if name in votes)
        votes[vote] += 1
    best = max(votes.values())
    return next(name for name in candidates if votes[name] == best)
