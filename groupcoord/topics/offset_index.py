"""The start and end offsets of every partition of a topic log, without reading its records.

Bounds come from the ``min``/``max`` statistics of the ``offset`` column that every add action of the Delta log
carries (delta-rs writes them). :func:`offsets_from_stats` aggregates every live file's statistics, which costs more
as files accumulate between compactions (tens of milliseconds at a few thousand files). Once a reader knows the
bounds at one version, :func:`offsets_at_version` brings them forward by reading only the commits since: a new file
can only extend its partition's range (a compaction's files repeat ranges already counted, nothing is ever deleted), so
the bounds after a commit are the bounds before it widened by its add actions. A commit it cannot read that way (a
file without statistics, a remove that changes data, a missing commit file) falls back to the full aggregation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from groupcoord.storage.tables import local_path_of, table_dataset

INCREMENTAL_COMMITS = 200
"""Most commits :func:`offsets_at_version` reads one by one before it aggregates every file's statistics instead."""


@dataclass(frozen=True)
class PartitionOffsets:
    """The log-start offset (first readable) and log-end offset (next to be written) of one partition."""

    start: int
    end: int


EMPTY = PartitionOffsets(0, 0)

Bounds = dict[int, PartitionOffsets]


def offsets_at_version(table: DeltaTable, known: tuple[int, Bounds], version: int) -> Bounds:
    """The bounds at ``version`` (the table's current one), from ``known`` (bounds at an earlier version) when the
    commits in between can be read, else from every file's statistics."""
    known_version, bounds = known
    if 0 <= known_version < version <= known_version + INCREMENTAL_COMMITS:
        updated = offsets_after_commits(Path(local_path_of(table)), bounds, known_version, version)
        if updated is not None:
            return updated
    return offsets_from_stats(table)


def offsets_after_commits(path: Path, bounds: Bounds, after: int, upto: int) -> Bounds | None:
    """``bounds`` (at version ``after``) widened by the add actions of commits ``after + 1`` .. ``upto``, or
    ``None`` when one of those commits cannot be read that way."""
    widened = dict(bounds)
    for version in range(after + 1, upto + 1):
        try:
            lines = (path / "_delta_log" / f"{version:020d}.json").read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        for line in lines:
            action = json.loads(line) if line.strip() else {}
            if "remove" in action and action["remove"].get("dataChange", True):
                return None
            add = action.get("add")
            if add is None:
                continue
            stats = json.loads(add.get("stats") or "{}")
            low, high = stats.get("minValues", {}).get("offset"), stats.get("maxValues", {}).get("offset")
            partition = add.get("partitionValues", {}).get("partition")
            if low is None or high is None or partition is None:
                return None
            widened[int(partition)] = _widen(widened.get(int(partition)), int(low), int(high) + 1)
    return widened


def widened(before: Bounds, ranges: Mapping[int, tuple[int, int]]) -> Bounds:
    """The bounds after appending offsets ``[low, high)`` to each partition of ``ranges``."""
    after = dict(before)
    for partition, (low, high) in ranges.items():
        after[partition] = _widen(after.get(partition), low, high)
    return after


def _widen(bounds: PartitionOffsets | None, start: int, end: int) -> PartitionOffsets:
    if bounds is None:
        return PartitionOffsets(start, end)
    return PartitionOffsets(min(bounds.start, start), max(bounds.end, end))


def offsets_from_stats(table: DeltaTable) -> dict[int, PartitionOffsets]:
    """Start/end offset per partition from the add actions' ``min.offset``/``max.offset`` statistics.

    A file without statistics (written by another Delta writer with stats off) makes its partition fall back to
    reading that partition's ``offset`` column.
    """
    actions = pa.table(table.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return {}
    if "min.offset" not in actions.column_names or "max.offset" not in actions.column_names:
        partitions = set(actions.column("partition.partition").to_pylist())
        return {p: scan_offsets(table, p) for p in partitions}
    grouped = actions.group_by("partition.partition").aggregate([
        ("min.offset", "min"), ("max.offset", "max"), ("max.offset", "count"), ("path", "count"),
    ])
    result: dict[int, PartitionOffsets] = {}
    for row in grouped.to_pylist():
        partition = int(row["partition.partition"])
        if row["max.offset_count"] < row["path_count"]:
            result[partition] = scan_offsets(table, partition)
        else:
            result[partition] = PartitionOffsets(int(row["min.offset_min"]), int(row["max.offset_max"]) + 1)
    return result


def scan_offsets(table: DeltaTable, partition: int) -> PartitionOffsets:
    """The bounds of ``partition`` from its ``offset`` column (for files without statistics)."""
    column = table_dataset(table, where=[("partition", "=", partition)]).to_table(columns=["offset"]).column("offset")
    if len(column) == 0:
        return EMPTY
    bounds = pc.min_max(column)
    return PartitionOffsets(bounds["min"].as_py(), bounds["max"].as_py() + 1)
