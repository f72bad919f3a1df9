"""Committing a micro-batch's offsets to the group from the driver, fenced by ownership (for sinks).

A sink that has made a batch durable (the ``groupcoord-delta`` sink, right after its Delta commit) calls::

    from groupcoord.sink.group_commit import commit_batch_offsets

    result = commit_batch_offsets("orders-ingest", {("orders", 0): 1200, ("orders", 3): 40},
                                  state_root="/data/gc", checkpoint_location="/data/ckpt/orders", batch_id=17)
    result.committed   # {("orders", 0): 1200}
    result.skipped     # {("orders", 3): "moved: ..."}: not committed, and rightly so

``offsets`` are the *next* offsets (last written offset + 1), as Kafka commits them. The function reads the
``groupcoord`` source's offset of batch ``batch_id`` from the query's checkpoint (``<checkpoint>/offsets/<id>``):
it names the member that read the batch and, for each partition, the generation in which that member acquired it.
A partition is committed only while that member still owns it from that same acquisition (its
:mod:`~groupcoord.source.fences` fence says so); the OffsetCommit carries the member's current generation,
which the coordinator checks. So a late commit from a previous owner (its partition has moved, and the new owner may
have committed further) is skipped instead of moving the group's offset backwards. A skipped partition loses
nothing: its new owner starts at the group's committed offset or later (the sink's own version, for the
``groupcoord-delta`` sink).

Raises :class:`GroupCommitError` when the checkpoint has no ``groupcoord`` offset for the group in that batch, or
when the coordinator cannot be reached within ``timeout_s``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.member.backoff import Backoff
from groupcoord.member.config import MemberOptions
from groupcoord.member.discovery import CoordinatorLocator, lease_candidates
from groupcoord.member.errors import CoordinatorUnavailableError
from groupcoord.member.wire import GroupClient
from groupcoord.protocol.errors import Errors
from groupcoord.sink.options import location_text
from groupcoord.source.fences import OwnershipFence, read_fence
from groupcoord.source.offset import SourceOffset
from groupcoord.state_root import StateRoot
from groupcoord.storage.location import TableLocation, parse_location

log = logging.getLogger("groupcoord.sink.group_commit")

Partition = tuple[str, int]

_RETRY_ON = frozenset({Errors.ILLEGAL_GENERATION, Errors.REBALANCE_IN_PROGRESS, Errors.NOT_COORDINATOR,
                       Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS})
"""Answers after which the fence is re-read and the commit tried again (the member's generation moved on, or the
coordinator moved)."""


class GroupCommitError(RuntimeError):
    """The batch's offsets could not be committed or skipped for a known reason; the message says why."""


@dataclass(frozen=True)
class GroupCommit:
    """What :func:`commit_batch_offsets` did: committed offsets, and skipped partitions with the reason."""

    committed: dict[Partition, int] = field(default_factory=dict)
    skipped: dict[Partition, str] = field(default_factory=dict)


def batch_source_offset(checkpoint_location: str | Path | TableLocation, batch_id: int,
                        group_id: str) -> SourceOffset:
    """The ``groupcoord`` source's end offset of batch ``batch_id`` for ``group_id``, from Spark's offset log (a
    local directory, a ``file:`` URI, or ``s3://`` / ``s3a://``)."""
    from groupcoord.sink.batches import offset_log_entry

    where = checkpoint_location if isinstance(checkpoint_location, TableLocation) else \
        parse_location(location_text(str(checkpoint_location), "checkpoint_location"))
    path = f"{where}/offsets/{batch_id}"
    try:
        text = offset_log_entry(where, batch_id)
    except OSError as exc:
        raise GroupCommitError(f"cannot read batch {batch_id}'s offsets in {path}: {exc.strerror or exc}") from None
    if text is None:
        raise GroupCommitError(f"cannot read batch {batch_id}'s offsets in {path}: no such file")
    for line in text.splitlines()[2:]:  # "v1", the batch metadata, then one offset per source ("-" for none)
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and "groupcoord" in data and data.get("group") == group_id:
            return SourceOffset.from_dict(data)
    raise GroupCommitError(f"batch {batch_id} in {path} has no groupcoord source offset of group {group_id!r}")


def commit_batch_offsets(group_id: str, offsets: Mapping[Partition, int], *, state_root: str | Path | StateRoot,
                         checkpoint_location: str | Path, batch_id: int, timeout_s: float = 30.0) -> GroupCommit:
    """Commit ``offsets`` of batch ``batch_id`` to ``group_id``, fenced by ownership (see the module docstring)."""
    if not offsets:
        return GroupCommit()
    read = batch_source_offset(checkpoint_location, batch_id, group_id)
    return commit_fenced(group_id, offsets, state_root=state_root, read=read, timeout_s=timeout_s)


def commit_fenced(group_id: str, offsets: Mapping[Partition, int], *, state_root: str | Path | StateRoot,
                  read: SourceOffset, timeout_s: float = 30.0, options: MemberOptions | None = None) -> GroupCommit:
    """Commit the partitions of ``offsets`` that ``read``'s member still owns from the acquisition it read them in.
    ``state_root``: an opened root (one on S3 carries its storage settings), or a local path; ``options`` say how
    to connect (SASL and TLS included; PLAINTEXT and the defaults when ``None``)."""
    deadline = time.monotonic() + timeout_s
    options = options or MemberOptions()
    backoff = Backoff(options.retry_backoff_ms, options.retry_backoff_max_ms)
    root = state_root if isinstance(state_root, StateRoot) else StateRoot.open(state_root)
    state_root = str(root.location)
    locator = CoordinatorLocator(group_id, lease_candidates(root), options)
    client: GroupClient | None = None
    try:
        while True:
            fence = read_fence(state_root, group_id, read.member_id)
            committing, skipped = _owned(offsets, read, fence)
            if not committing or fence is None:
                return GroupCommit({}, skipped)
            try:
                client = client or locator.locate()
                errors = client.offset_commit(
                    group_id=group_id, generation_id=fence.generation_id, member_id=fence.member_id,
                    group_instance_id=None,
                    offsets={TopicPartition(*p): OffsetAndMetadata(o, "", -1) for p, o in committing.items()})
            except CoordinatorUnavailableError as exc:
                errors = {}
                log.info("group %s: commit of batch offsets not delivered (%s); retrying", group_id, exc)
                _closed(client)
                client = None
            failed = {(tp.topic, tp.partition): e for tp, e in errors.items() if e is not Errors.NONE}
            if errors and not failed:
                return GroupCommit(committing, skipped)
            error = next(iter(failed.values()), Errors.COORDINATOR_NOT_AVAILABLE)
            if error in (Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID):
                reason = f"the reading member {read.member_id} is no longer in the group ({error.name})"
                return GroupCommit({}, {**skipped, **{p: reason for p in committing}})
            if error not in _RETRY_ON:
                raise GroupCommitError(f"group {group_id}: OffsetCommit answered {error.name}: {error.description}")
            if error is not Errors.ILLEGAL_GENERATION and error is not Errors.REBALANCE_IN_PROGRESS:
                _closed(client)
                client = None
            if time.monotonic() >= deadline:
                raise GroupCommitError(f"group {group_id}: could not commit batch offsets within {timeout_s:g} s "
                                       f"(last answer {error.name})")
            time.sleep(min(backoff.next_ms() / 1000, max(deadline - time.monotonic(), 0)))
    finally:
        _closed(client)


def _owned(offsets: Mapping[Partition, int], read: SourceOffset,
           fence: OwnershipFence | None) -> tuple[dict[Partition, int], dict[Partition, str]]:
    """Split ``offsets`` into those the reading member still owns from the same acquisition, and the rest."""
    committing: dict[Partition, int] = {}
    skipped: dict[Partition, str] = {}
    for partition, offset in offsets.items():
        tp = TopicPartition(*partition)
        position = read.positions.get(tp)
        if position is None:
            skipped[partition] = f"not read by the groupcoord source in this batch (member {read.member_id})"
        elif fence is None:
            skipped[partition] = f"the reading member {read.member_id} has left the group"
        elif fence.acquired.get(tp) != position.acquired:
            skipped[partition] = (f"moved: read by member {read.member_id} from its generation "
                                  f"{position.acquired} acquisition, which it no longer owns")
        else:
            committing[partition] = int(offset)
    return committing, skipped


def _closed(client: GroupClient | None) -> None:
    """Close ``client``'s connection, if there is one."""
    if client is not None:
        client.connection.close()
