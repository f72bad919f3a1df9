"""The ``groupcoord`` source's offset: a pure value that Spark checkpoints, and the batch ranges it implies.

One JSON document per micro-batch end::

    {"groupcoord": 1, "group": "orders-ingest", "member": "groupcoord-member-3f…", "generation": 7,
     "partitions": {"orders:0": {"next": 1200, "acquired": 5},
                    "orders:3": {"next": 40, "acquired": 7, "from": 12}}}

- ``next``: the next offset to read of each partition the member owned when the batch was planned;
- ``acquired``: the generation in which the member acquired that partition (what commits are fenced by);
- ``from``: only on a partition whose reading does not continue from the previous batch: acquired in this batch
  (after a move, or at the query's first batch), or moved past offsets that retention removed. The batch then
  reads ``[from, next)`` and the previous batch's position for it, stale after a move, is ignored.
- ``lost``: ``true`` only beside a ``from`` that moved past offsets retention removed (``failOnDataLoss`` false):
  the one jump, besides ``reset-offsets``, that the ``groupcoord-delta`` sink accepts past its table's version.

:func:`batch_ranges` depends on the two offsets alone, as Spark's replay of a planned batch requires.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka.structs import TopicPartition

from groupcoord.source.fences import parse_partition_key, partition_key

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Position:
    """One partition in an offset: the next offset, the acquiring generation, and where this batch starts it."""

    next: int
    acquired: int
    start: int | None = None
    lost: bool = False

    def to_dict(self) -> dict[str, int | bool]:
        """The JSON form (``from`` and ``lost`` only when set)."""
        data: dict[str, int | bool] = {"next": self.next, "acquired": self.acquired}
        if self.start is not None:
            data["from"] = self.start
        if self.lost:
            data["lost"] = True
        return data


@dataclass(frozen=True)
class SourceOffset:
    """The source's offset (see the module docstring). An empty one (no member yet) is the initial offset."""

    group_id: str
    member_id: str = ""
    generation_id: int = -1
    positions: Mapping[TopicPartition, Position] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict, keys in a fixed order so that equal offsets serialise equally."""
        return {"groupcoord": FORMAT_VERSION, "group": self.group_id, "member": self.member_id,
                "generation": self.generation_id,
                "partitions": {partition_key(tp): p.to_dict() for tp, p in sorted(self.positions.items())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SourceOffset:
        """Parse :meth:`to_dict`'s output (as Spark hands it back from its checkpoint)."""
        if data.get("groupcoord") != FORMAT_VERSION:
            raise ValueError(f"not a groupcoord source offset (version {FORMAT_VERSION}): {dict(data)!r}")
        return cls(group_id=str(data["group"]), member_id=str(data["member"]), generation_id=int(data["generation"]),
                   positions={parse_partition_key(k): Position(int(v["next"]), int(v["acquired"]),
                                                               int(v["from"]) if "from" in v else None,
                                                               bool(v.get("lost", False)))
                              for k, v in data["partitions"].items()})

    def continues(self, tp: TopicPartition, member_id: str, acquired: int) -> Position | None:
        """This offset's position of ``tp`` if the same member holds it from the same acquisition, else ``None``."""
        position = self.positions.get(tp)
        if position is None or self.member_id != member_id or position.acquired != acquired:
            return None
        return position


def batch_ranges(start: SourceOffset, end: SourceOffset) -> dict[TopicPartition, tuple[int, int]]:
    """The ``[low, high)`` offsets of each partition a batch from ``start`` to ``end`` reads (empty ranges left out).

    A partition reads from ``end``'s ``from`` when it has one (and the offsets differ: an unchanged offset is no
    batch), else from ``start``'s ``next`` when ``start`` has it from the same acquisition.
    """
    if start == end:
        return {}
    ranges = {}
    for tp, position in end.positions.items():
        if position.start is not None:
            low = position.start
        else:
            previous = start.continues(tp, end.member_id, position.acquired)
            low = previous.next if previous is not None else position.next
        if position.next > low:
            ranges[tp] = (low, position.next)
    return ranges


def lost_jumps(end: SourceOffset) -> dict[TopicPartition, int]:
    """The partitions whose batch to ``end`` moved past offsets that retention removed, and the offset it moved to."""
    return {tp: p.start for tp, p in end.positions.items() if p.lost and p.start is not None}
