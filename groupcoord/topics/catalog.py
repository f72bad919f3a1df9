"""The topic catalog: which topics exist, their partition counts and optional per-partition racks.

Layout: one Delta table at ``<root>/catalog`` with one row per topic (``topic``, ``topic_id``, ``partitions``,
``racks``, ``created_at``, ``updated_at``). The catalog is small, so every change rewrites the whole table in one
conditional commit (``mode="overwrite"`` at the version it read): concurrent creators and alterers serialize on the
Delta version, and the loser re-reads, re-validates and retries, so no update is ever lost. Delta time travel keeps
the history of every change.

Partition counts only grow. Readers poll cheaply: :meth:`TopicCatalog.partition_counts` re-reads only the new Delta
log entries and reuses its parsed rows while the version is unchanged.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from groupcoord.state_root import StateRoot
from groupcoord.storage.commits import COMMIT_ID_KEY
from groupcoord.storage.freshness import TableFreshness
from groupcoord.storage.tables import holds_commit, open_if_exists, open_or_create, table_dataset
from groupcoord.topics.config import TopicsConfig
from groupcoord.topics.delta_cas import RetryPolicy, cas_commit_properties, commit_with_retry
from groupcoord.topics.errors import (
    InvalidPartitionsError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from groupcoord.topics.log_table import create_topic_log
from groupcoord.topics.names import collision_key, validate_topic_name

log = logging.getLogger("groupcoord.topics.catalog")

MAX_PARTITIONS = 2**31 - 1

CATALOG_SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("topic_id", pa.string(), nullable=False),
    pa.field("partitions", pa.int32(), nullable=False),
    pa.field("racks", pa.list_(pa.string()), nullable=True),
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("updated_at", pa.timestamp("us", tz="UTC"), nullable=False),
])

Racks = tuple[str | None, ...]


@dataclass(frozen=True)
class TopicInfo:
    """One topic of the catalog. ``racks`` has one entry per partition, or is ``None`` when none were given."""

    name: str
    topic_id: str
    partitions: int
    racks: Racks | None
    created_at: datetime
    updated_at: datetime

    def rack(self, partition: int) -> str | None:
        """The rack of ``partition``, or ``None``."""
        return self.racks[partition] if self.racks is not None else None


def new_topic_id() -> uuid.UUID:
    """The id of a topic being created: a random UUID, as Kafka's controller gives one (kept for the topic's life)."""
    return uuid.uuid4()


def check_partition_count(partitions: int) -> None:
    """Raise :class:`InvalidPartitionsError` unless ``partitions`` is a valid partition count (1 to 2**31-1)."""
    if partitions < 1:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if partitions > MAX_PARTITIONS:
        raise InvalidPartitionsError(f"Number of partitions must be at most {MAX_PARTITIONS}.")


def _check_racks(racks: Sequence[str | None] | None, expected: int, what: str) -> Racks | None:
    if racks is None:
        return None
    if len(racks) != expected:
        raise InvalidPartitionsError(f"Got {len(racks)} racks for {expected} {what}; give one rack per partition.")
    return tuple(racks)


class TopicCatalog:
    """The topic catalog of one state root.

    ``create``/``alter`` are conditional commits with re-read-and-retry; ``list``/``describe``/``partition_counts``/
    ``version`` read the latest committed version. Safe to share between threads.
    """

    def __init__(self, root: StateRoot, *, config: TopicsConfig | None = None) -> None:
        self._root = root
        self._config = config or TopicsConfig()
        self._policy = RetryPolicy(backoff_ms=self._config.commit_backoff_ms,
                                   timeout_ms=self._config.commit_timeout_ms)
        self._lock = threading.Lock()
        self._table: DeltaTable | None = None
        self._freshness = TableFreshness(root.catalog_path)
        self._cached: tuple[int, dict[str, TopicInfo]] = (-1, {})

    @property
    def root(self) -> StateRoot:
        """The state root this catalog belongs to."""
        return self._root

    @property
    def config(self) -> TopicsConfig:
        """The settings this catalog commits with."""
        return self._config

    # --- reads --------------------------------------------------------------------------------------------------------

    def version(self) -> int:
        """The catalog's current Delta version (``-1`` before the first topic): a change detector for pollers."""
        with self._lock:
            table = self._refreshed()
            return table.version() if table is not None else -1

    def list(self) -> list[TopicInfo]:
        """Every topic, sorted by name."""
        return sorted(self._snapshot().values(), key=lambda info: info.name)

    def describe(self, name: str) -> TopicInfo:
        """The topic called ``name``, or :class:`UnknownTopicOrPartitionError`."""
        info = self._snapshot().get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        return info

    def partition_counts(self) -> dict[str, int]:
        """Partition count per topic. Cheap when nothing changed: only new Delta log entries are read."""
        return self.versioned_partition_counts()[1]

    def versioned_partition_counts(self) -> tuple[int, dict[str, int]]:
        """The catalog version and the partition counts at exactly that version."""
        version, topics = self.versioned_topics()
        return version, {name: info.partitions for name, info in topics.items()}

    def versioned_topics(self) -> tuple[int, dict[str, TopicInfo]]:
        """The catalog version and every topic at exactly that version, by name."""
        with self._lock:
            table = self._refreshed()
            if table is None:
                return -1, {}
            return table.version(), self._rows_at(table)

    def topic_ids(self) -> dict[str, uuid.UUID]:
        """Every topic's id (a random UUID given at its creation, kept for its life), by name."""
        return {name: uuid.UUID(info.topic_id) for name, info in self._snapshot().items()}

    # --- writes -------------------------------------------------------------------------------------------------------

    def create(self, name: str, partitions: int, *, if_not_exists: bool = False,
               racks: Sequence[str | None] | None = None) -> TopicInfo:
        """Add topic ``name`` with ``partitions`` partitions (and one rack per partition, if given).

        Raises :class:`InvalidTopicError`, :class:`InvalidPartitionsError` or :class:`TopicAlreadyExistsError`
        (unless ``if_not_exists``, which returns the existing topic unchanged) before changing anything.
        """
        validate_topic_name(name)
        check_partition_count(partitions)
        rack_tuple = _check_racks(racks, partitions, "partitions")
        existing = self._check_new_name(self._snapshot(), name, if_not_exists=if_not_exists)
        if existing is not None:
            return existing
        # The log table comes first, so a topic in the catalog always has its log.
        create_topic_log(self._root, name)

        def attempt(table: DeltaTable) -> TopicInfo:
            topics = self._rows_at(table)
            found = self._check_new_name(topics, name, if_not_exists=if_not_exists)
            if found is not None:
                return found
            now = datetime.now(UTC)
            info = TopicInfo(name, str(new_topic_id()), partitions, rack_tuple, now, now)
            self._write(table, {**topics, name: info}, operation="create", topic=name)
            return info

        with self._lock:
            table = self._writable()
            return commit_with_retry(table, attempt, policy=self._policy, what=f"creating topic '{name}'").value

    def alter(self, name: str, partitions: int, *, new_racks: Sequence[str | None] | None = None) -> TopicInfo:
        """Grow topic ``name`` to ``partitions`` partitions; ``new_racks`` gives the racks of the added ones.

        Shrinking, or keeping the count, raises :class:`InvalidPartitionsError` (as Kafka does).
        """
        check_partition_count(partitions)
        self._check_growth(self.describe(name), partitions)

        def attempt(table: DeltaTable) -> TopicInfo:
            topics = self._rows_at(table)
            current = topics.get(name)
            if current is None:
                raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
            self._check_growth(current, partitions)
            added = _check_racks(new_racks, partitions - current.partitions, "new partitions")
            racks: Racks | None = current.racks
            if added is not None or racks is not None:
                old = racks if racks is not None else (None,) * current.partitions
                racks = old + (added if added is not None else (None,) * (partitions - current.partitions))
            info = replace(current, partitions=partitions, racks=racks, updated_at=datetime.now(UTC))
            self._write(table, {**topics, name: info}, operation="alter", topic=name)
            return info

        with self._lock:
            table = self._writable()
            return commit_with_retry(table, attempt, policy=self._policy, what=f"altering topic '{name}'").value

    # --- internals ----------------------------------------------------------------------------------------------------

    @staticmethod
    def _check_new_name(topics: dict[str, TopicInfo], name: str, *, if_not_exists: bool) -> TopicInfo | None:
        if name in topics:
            if if_not_exists:
                return topics[name]
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        key = collision_key(name)
        clashes = sorted(other for other in topics if collision_key(other) == key)
        if clashes:
            raise InvalidTopicError(
                f"Topic '{name}' collides with existing topic '{clashes[0]}' ('.' and '_' are the same character "
                "in metric names)."
            )
        return None

    @staticmethod
    def _check_growth(current: TopicInfo, partitions: int) -> None:
        if partitions == current.partitions:
            raise InvalidPartitionsError(f"Topic '{current.name}' already has {partitions} partitions.")
        if partitions < current.partitions:
            raise InvalidPartitionsError(
                f"Topic '{current.name}' currently has {current.partitions} partitions, which is higher than the "
                f"requested {partitions}; partitions can only grow."
            )

    def _refreshed(self) -> DeltaTable | None:
        if self._table is None:
            self._table = open_if_exists(self._root.catalog_path)
        else:
            self._freshness.refresh(self._table)
        return self._table

    def _writable(self) -> DeltaTable:
        table = self._refreshed()
        if table is None:
            table = self._table = open_or_create(self._root.catalog_path, CATALOG_SCHEMA, name="groupcoord catalog")
        return table

    def _snapshot(self) -> dict[str, TopicInfo]:
        with self._lock:
            table = self._refreshed()
            return dict(self._rows_at(table)) if table is not None else {}

    def _rows_at(self, table: DeltaTable) -> dict[str, TopicInfo]:
        version = table.version()
        if self._cached[0] != version:
            rows = table_dataset(table).to_table().to_pylist()
            self._cached = (version, {row["topic"]: _info_from_row(row) for row in rows})
        return self._cached[1]

    def _write(self, table: DeltaTable, topics: dict[str, TopicInfo], *, operation: str, topic: str) -> None:
        """Overwrite the catalog with ``topics`` at the version after ``table``'s. A conflict whose version holds
        this write's ``groupcoord.commitId`` is this write, whose response was lost (on object storage): it stands,
        and ``table`` moves to it."""
        rows = [_row_from_info(info) for _, info in sorted(topics.items())]
        data = pa.Table.from_pylist(rows, schema=CATALOG_SCHEMA)
        commit_id, version = uuid.uuid4().hex, table.version() + 1
        try:
            write_deltalake(table, data, mode="overwrite", commit_properties=cas_commit_properties(
                groupcoord_operation=operation, topic=topic, **{COMMIT_ID_KEY: commit_id}))
        except CommitFailedError:
            if not holds_commit(self._root.catalog_path, version, commit_id):
                raise
            log.info("catalog commit at version %d: its response was lost, and the version holds it", version)
            table.update_incremental()


def _info_from_row(row: dict[str, object]) -> TopicInfo:
    racks = row["racks"]
    created, updated = row["created_at"], row["updated_at"]
    assert isinstance(created, datetime) and isinstance(updated, datetime)
    return TopicInfo(
        name=str(row["topic"]),
        topic_id=str(row["topic_id"]),
        partitions=int(row["partitions"]),  # type: ignore[call-overload]
        racks=tuple(racks) if isinstance(racks, list) else None,
        created_at=created.astimezone(UTC),
        updated_at=updated.astimezone(UTC),
    )


def _row_from_info(info: TopicInfo) -> dict[str, object]:
    return {
        "topic": info.name,
        "topic_id": info.topic_id,
        "partitions": info.partitions,
        "racks": list(info.racks) if info.racks is not None else None,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
    }
