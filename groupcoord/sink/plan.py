"""What one ``groupcoord-delta`` commit does, decided on the driver from the snapshot it commits on (pure).

For each partition the source's batch covers (``start``..``end``, ``end`` the next offset) and the table's app
transaction version ``held`` (the next offset the table does not hold yet; ``None`` when the group never wrote it):

- rows at offsets below ``held`` are already in the table: a file holding only such rows is dropped whole, a file
  straddling ``held`` is rewritten from ``held`` on, the others are kept;
- a batch that starts above ``held`` would leave a gap. It fails the query with :class:`SinkGapError`, unless a
  reset marker (``groupcoord groups reset-offsets``) moved the group's offset to exactly that start;
- the commit writes an app transaction at ``end`` for every partition whose ``end`` is above ``held``, and each
  partition's version after the commit is what the sink then commits to the group.

Offsets are Kafka's *next* offsets throughout, as committed offsets are, so the committed offsets equal the
sink's versions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from groupcoord.sink.files import PartitionFile

TopicPartitionKey = tuple[str, int]


class SinkGapError(RuntimeError):
    """A batch would leave records of a partition unwritten between the table's version and the batch's start."""


class SinkBatchError(RuntimeError):
    """The rows written do not belong to the source's batch (a partition or an offset it did not plan)."""


@dataclass(frozen=True)
class BatchRange:
    """The offsets ``start``..``end - 1`` of one partition that the source's batch reads."""

    start: int
    end: int


@dataclass(frozen=True)
class CommitPlan:
    """The files to commit as they are, to rewrite from an offset, or to drop; the app transactions to write; each
    partition's version once the commit is done."""

    keep: tuple[PartitionFile, ...] = ()
    trim: tuple[tuple[PartitionFile, int], ...] = ()
    drop: tuple[PartitionFile, ...] = ()
    ends: Mapping[TopicPartitionKey, int] = field(default_factory=dict)
    versions: Mapping[TopicPartitionKey, int] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        """Whether the plan needs a Delta commit at all (a replayed batch needs none)."""
        return bool(self.keep or self.trim or self.ends)


def plan_commit(group_id: str, ranges: Mapping[TopicPartitionKey, BatchRange], files: Iterable[PartitionFile],
                held: Mapping[TopicPartitionKey, int | None],
                resets: Mapping[TopicPartitionKey, int] | None = None) -> CommitPlan:
    """The commit of one batch (see the module docstring); ``resets`` are offsets a reset marker allows to jump to."""
    by_partition: dict[TopicPartitionKey, list[PartitionFile]] = defaultdict(list)
    for file in files:
        by_partition[(file.topic, file.partition)].append(file)
    _check_files_in_batch(ranges, by_partition)
    keep: list[PartitionFile] = []
    trim: list[tuple[PartitionFile, int]] = []
    drop: list[PartitionFile] = []
    ends: dict[TopicPartitionKey, int] = {}
    versions: dict[TopicPartitionKey, int] = {}
    for tp, span in sorted(ranges.items()):
        version = held.get(tp)
        if version is not None and span.start > version and (resets or {}).get(tp) != span.start:
            raise SinkGapError(
                f"groupcoord-delta: a gap in {tp[0]}-{tp[1]} of group '{group_id}': the batch starts at offset "
                f"{span.start} but the table holds records only up to offset {version}; the records between would "
                f"be skipped (to skip them on purpose, move the group's offset with `groupcoord groups "
                f"reset-offsets --execute` while no query runs)")
        if version is None or span.start > version:  # a first write, or a jump a reset allowed
            version = span.start
        for file in by_partition.get(tp, []):
            if file.last < version:
                drop.append(file)
            elif file.first < version:
                trim.append((file, version))
            else:
                keep.append(file)
        if span.end > version:
            ends[tp] = span.end
        if span.end > span.start or tp in ends or held.get(tp) is not None:
            versions[tp] = max(version, span.end)
    return CommitPlan(tuple(keep), tuple(trim), tuple(drop), ends, versions)


def _check_files_in_batch(ranges: Mapping[TopicPartitionKey, BatchRange],
                          files: Mapping[TopicPartitionKey, list[PartitionFile]]) -> None:
    for tp, written in files.items():
        span = ranges.get(tp)
        if span is None:
            raise SinkBatchError(f"groupcoord-delta: rows of {tp[0]}-{tp[1]} that the source's batch did not read "
                                 f"(the sink needs the topic, partition and offset columns of its source unchanged)")
        for file in written:
            if file.first < span.start or file.last >= span.end:
                raise SinkBatchError(
                    f"groupcoord-delta: rows of {tp[0]}-{tp[1]} at offsets {file.first}..{file.last} outside the "
                    f"source's batch {span.start}..{span.end - 1}")
