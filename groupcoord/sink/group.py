"""The ``groupcoord-delta`` sink's links to the group: the source's batches, reset markers, and the group commit.

- :func:`source_batch` turns two of the source's checkpointed offsets into the batch's group and ranges
  (:mod:`groupcoord.source.offset`);
- :func:`reset_markers` reads the offsets ``groupcoord groups reset-offsets`` committed (their metadata is
  :data:`~groupcoord.topics.app_transactions.RESET_OFFSETS_METADATA`): with a batch's own ``jumps`` past offsets that
  retention removed (the source's ``failOnDataLoss`` false), the only jumps past a table's version the sink accepts;
- :func:`commit_to_group` commits the table's versions to the group right after the Delta commit, fenced by the
  ownership of the member that read the batch (:func:`groupcoord.sink.group_commit.commit_fenced`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groupcoord.member.config import MemberOptions
from groupcoord.sink.batches import SourceBatch
from groupcoord.sink.plan import BatchRange, TopicPartitionKey
from groupcoord.source.offset import FORMAT_VERSION, SourceOffset, batch_ranges, lost_jumps
from groupcoord.state_root import StateRoot
from groupcoord.topics.app_transactions import RESET_OFFSETS_METADATA

log = logging.getLogger("groupcoord.sink.data_sink")


def source_batch(previous: Mapping[str, Any] | None, end: Mapping[str, Any]) -> SourceBatch | None:
    """The batch from ``previous`` to ``end`` (the source's checkpointed offsets); ``None`` for another source's."""
    if end.get("groupcoord") != FORMAT_VERSION:
        return None
    last = SourceOffset.from_dict(end)
    first = SourceOffset.from_dict(previous) if previous is not None and previous.get("groupcoord") else \
        SourceOffset(last.group_id)
    ranges = {(tp.topic, tp.partition): BatchRange(low, high) for tp, (low, high) in batch_ranges(first, last).items()}
    jumps = {(tp.topic, tp.partition): start for tp, start in lost_jumps(last).items()}
    return SourceBatch(last.group_id, ranges, dict(end), jumps)


def reset_markers(state_root: str | Path | StateRoot, group_id: str) -> dict[TopicPartitionKey, int]:
    """The group's committed offsets that ``reset-offsets`` wrote, by partition."""
    from groupcoord.state.schema import OFFSETS
    from groupcoord.state.views import read_view

    root = state_root if isinstance(state_root, StateRoot) else StateRoot.open(state_root)
    rows = read_view(root, OFFSETS).to_pylist()
    return {(r["topic"], r["partition"]): r["offset"] for r in rows
            if r["group_id"] == group_id and r["metadata"] == RESET_OFFSETS_METADATA and r["offset"] is not None}


def commit_to_group(state_root: str | Path | StateRoot, batch: SourceBatch,
                    versions: Mapping[TopicPartitionKey, int], *, options: MemberOptions | None = None) -> None:
    """Commit ``versions`` to the batch's group as the member that read the batch (partitions it no longer owns
    are skipped: their new owner starts from the table's version), connecting as ``options`` say."""
    from groupcoord.sink.group_commit import commit_fenced

    done = commit_fenced(batch.group_id, versions, state_root=state_root, read=SourceOffset.from_dict(batch.end),
                         options=options)
    if done.skipped:
        log.info("group %s: offsets not committed (no longer owned by the reader): %s", batch.group_id,
                 "; ".join(f"{t}-{p}: {why}" for (t, p), why in sorted(done.skipped.items())))
