"""Per-partition Delta app transactions: how an exactly-once sink records, in its own commits, how far it ingested.

The exactly-once sink (the ``groupcoord-delta`` sink's writer, :mod:`groupcoord.sink.commit`, which both engines of
the ingestion job write with) commits rows together with one Delta app transaction per
``<group>/<topic>/<partition>`` whose version is the partition's end offset (the next offset to ingest), so the table
itself says how far each partition of each group was written, atomically with the data.

delta-rs refuses a commit whose app transactions were written by another commit since the snapshot it was based
on (``CommitFailedError``, a concurrent transaction); appends without a shared app id are retried by delta-rs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from deltalake import CommitProperties, DeltaTable, Transaction

GROUP_METADATA_KEY = "groupcoord_group"
"""The commit-info key naming the group whose offsets a sink commit carries."""

MEMBER_METADATA_KEY = "groupcoord_member"
"""The commit-info key naming the member that read a ``groupcoord-delta`` commit's batch (who wrote what)."""

RESET_OFFSETS_METADATA = "groupcoord:reset-offsets"
"""The metadata ``groupcoord groups reset-offsets --execute`` commits offsets with: the reset marker. A sink accepts
a batch that starts past its version (which would otherwise be a gap) only at an offset committed with it."""


def app_id(group_id: str, topic: str, partition: int) -> str:
    """The app transaction id of one partition of one group: ``"<group>/<topic>/<partition>"``."""
    return f"{group_id}/{topic}/{partition}"


def transaction_versions(table: DeltaTable, group_id: str,
                         partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
    """The version (next offset to ingest) of each ``(topic, partition)`` in ``table``'s snapshot; ``None`` when
    the group never wrote it."""
    return {(t, p): table.transaction_version(app_id(group_id, t, p)) for t, p in partitions}


def offsets_commit(group_id: str, ends: Mapping[tuple[str, int], int], *, max_commit_retries: int | None = None,
                   metadata: Mapping[str, str] | None = None) -> CommitProperties:
    """Commit properties carrying one app transaction per partition of ``ends`` (its end offset as the version),
    and the group (plus ``metadata``) in the commit info."""
    transactions = [Transaction(app_id(group_id, t, p), end) for (t, p), end in sorted(ends.items())]
    return CommitProperties(app_transactions=transactions,
                            custom_metadata={**(metadata or {}), GROUP_METADATA_KEY: group_id},
                            max_commit_retries=max_commit_retries)

