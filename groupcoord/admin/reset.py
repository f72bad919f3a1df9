"""The offset reset planner: every ``groups reset-offsets`` mode as a strategy, clamped to the log (pure).

A strategy names the offset one partition should move to; :func:`plan_reset` asks it for every partition in scope
and clamps the answer to ``[log-start, log-end]``, as Kafka's tool does. Example: a group committed 40 on ``t-0``,
whose log holds offsets 0..99 (log-end 100)::

    plan_reset(ShiftBy(100), inputs)  ->  (PlannedOffset("t", 0, 100),)    # 140 clamped to the log-end
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from groupcoord.topics import PartitionOffsets

TopicPartitionKey = tuple[str, int]
"""(topic, partition)."""

Missing = Literal["log-end", "skip", "error"]
"""What :class:`ToOffsets` does for a partition it has no offset for."""


class ResetError(ValueError):
    """The reset cannot be planned (no current offset to shift, malformed CSV, ...); one line for the user."""


@dataclass(frozen=True, kw_only=True)
class ResetInputs:
    """What a plan is computed from: the partitions in scope, the group's committed offsets, and the log bounds."""

    scope: tuple[TopicPartitionKey, ...]
    current: Mapping[TopicPartitionKey, int]
    bounds: Mapping[TopicPartitionKey, PartitionOffsets]


@dataclass(frozen=True)
class PlannedOffset:
    """One row of a plan: ``partition`` of ``topic`` moves to ``offset``."""

    topic: str
    partition: int
    offset: int


class ResetStrategy(Protocol):
    """Where one partition should go, before clamping; ``None`` leaves the partition out of the plan."""

    def target(self, tp: TopicPartitionKey, inputs: ResetInputs) -> int | None:
        """The unclamped new offset of ``tp``."""


@dataclass(frozen=True)
class ToEarliest:
    """``--to-earliest``: the log-start offset."""

    def target(self, tp: TopicPartitionKey, inputs: ResetInputs) -> int | None:
        """The log-start offset of ``tp``."""
        return inputs.bounds[tp].start


@dataclass(frozen=True)
class ToLatest:
    """``--to-latest``: the log-end offset."""

    def target(self, tp: TopicPartitionKey, inputs: ResetInputs) -> int | None:
        """The log-end offset of ``tp``."""
        return inputs.bounds[tp].end


@dataclass(frozen=True)
class ToOffset:
    """``--to-offset N``: the same offset everywhere."""

    offset: int

    def target(self, tp: TopicPartitionKey, inputs: ResetInputs) -> int | None:
        """``offset``."""
        return self.offset


@dataclass(frozen=True)
class ShiftBy:
    """``--shift-by N``: the committed offset plus ``shift`` (negative moves back); needs a committed offset."""

    shift: int

    def target(self, tp: TopicPartitionKey, inputs: ResetInputs) -> int | None:
        """The committed offset of ``tp`` plus the shift."""
        if tp not in inputs.current:
            raise ResetError(f"no committed offset to shift for partition {tp[0]}-{tp[1]}")
        return inputs.current[tp] + self.shift


@dataclass(frozen=True)
class ToCurrent:
    """``--to-current``: the committed offset, or the log-end offset where nothing is committed (as Kafka)."""

    def target(self, tp: TopicPartitionKey, inputs: ResetInputs) -> int | None:
        """The committed offset of ``tp``, else its log-end."""
        return inputs.current.get(tp, inputs.bounds[tp].end)


@dataclass(frozen=True)
class ToOffsets:
    """Given offsets per partition: ``--to-datetime``/``--by-duration`` (missing: log-end), ``--from-file``
    (missing: error) and ``--as-of`` (missing: skip, the partition had no committed offset then)."""

    offsets: Mapping[TopicPartitionKey, int]
    missing: Missing
    source: str = "the given offsets"

    def target(self, tp: TopicPartitionKey, inputs: ResetInputs) -> int | None:
        """The given offset of ``tp``, or what ``missing`` says."""
        if tp in self.offsets:
            return self.offsets[tp]
        if self.missing == "log-end":
            return inputs.bounds[tp].end
        if self.missing == "skip":
            return None
        raise ResetError(f"{self.source} has no offset for partition {tp[0]}-{tp[1]}")


def clamp(offset: int, bounds: PartitionOffsets) -> int:
    """``offset`` moved into ``[bounds.start, bounds.end]``."""
    return max(bounds.start, min(offset, bounds.end))


def plan_reset(strategy: ResetStrategy, inputs: ResetInputs) -> tuple[PlannedOffset, ...]:
    """The plan for every partition in scope, sorted by topic and partition, clamped to the log."""
    plan = []
    for tp in sorted(set(inputs.scope)):
        wanted = strategy.target(tp, inputs)
        if wanted is not None:
            plan.append(PlannedOffset(tp[0], tp[1], clamp(wanted, inputs.bounds[tp])))
    return tuple(plan)


# --- Kafka's CSV format (--export writes it, --from-file reads it) ---------------------------------------------------

def export_csv(plan: Sequence[PlannedOffset]) -> str:
    """The plan as Kafka's single-group CSV: ``topic,partition,offset`` lines."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in plan:
        writer.writerow([row.topic, row.partition, row.offset])
    return out.getvalue()


def parse_csv(text: str, *, group_id: str, source: str = "CSV") -> dict[TopicPartitionKey, int]:
    """Offsets from Kafka's CSV: ``topic,partition,offset``, or ``group,topic,partition,offset`` (rows of other
    groups are ignored). Raises :class:`ResetError` naming the first malformed line."""
    offsets: dict[TopicPartitionKey, int] = {}
    for number, fields in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not fields or all(not f.strip() for f in fields):
            continue
        fields = [f.strip() for f in fields]
        if len(fields) == 4:
            group, *fields = fields
            if group != group_id:
                continue
        if len(fields) != 3 or not fields[0]:
            raise ResetError(f"{source} line {number}: expected TOPIC,PARTITION,OFFSET, got {','.join(fields)!r}")
        topic, partition, offset = fields
        try:
            key, value = (topic, int(partition)), int(offset)
        except ValueError:
            raise ResetError(f"{source} line {number}: partition and offset must be integers, got "
                             f"{partition!r} and {offset!r}") from None
        if key[1] < 0 or value < 0:
            raise ResetError(f"{source} line {number}: partition and offset must not be negative")
        offsets[key] = value
    if not offsets:
        raise ResetError(f"{source} holds no offsets for group '{group_id}'")
    return offsets
