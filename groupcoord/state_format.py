"""The state format's history, and the migration of a state root written by an older release.

``<root>/_groupcoord/format.json`` names the format a root is in (:mod:`groupcoord.state_root`). Each format after
the first is one step here, frozen once released: a step describes what that format changed, never "whatever the
current code writes", so migrating an old root stays the same whatever later formats add.

- **1** (release 0.1.0): record log, lease, catalog, topic logs (``partition, offset, timestamp, key, value``),
  materialized state.
- **2**: every topic log gains ``headers``, ``timestamp_type`` and ``compression`` (what Produce keeps of a record
  batch). The columns are added to the Delta schema (a metadata-only commit, protocol (1,2) kept); rows written before
  read them as null, which readers take as no headers, CreateTime and no compression.
- **3**: the record log may hold consumer groups (KIP-848): five new record kinds, ``consumer_group_metadata`` (the
  group epoch), ``consumer_group_member_metadata`` (a member's subscription and client), ``consumer_group_target_
  assignment_member`` and ``consumer_group_target_assignment_metadata`` (the target assignment and its epoch), and
  ``consumer_group_current_member_assignment`` (a member's epochs, state and owned partitions), each with its
  tombstone (:mod:`groupcoord.coordinator.consumer_records`). They are rows of the record log's existing schema
  (``kind``, ``key``, ``value``), so no table changes: the step is a no-op and a root of format 2 loads unchanged,
  only its marker says 3. The bump keeps an older groupcoord, which refuses a newer format, from misreading a log
  that holds these kinds.
- **4**: a consumer group may hold members of the classic protocol (the online migration between classic and
  consumer groups, Kafka's ``group.consumer.migration.policy``): a ``consumer_group_member_metadata`` value may carry
  ``classic_member_metadata`` (the member's session timeout and its JoinGroup protocols, each ``[name, base64
  metadata]``). A value without it is a member of the consumer protocol, so every record of format 3 reads as
  before: the step is a no-op. The bump keeps a groupcoord of format 3, which would read a classic member as a
  consumer-protocol member, from opening such a log.
- **5**: the record log may hold users' credentials for SASL (``user_credential``: SCRAM salt, StoredKey, ServerKey
  and iterations, or PLAIN's salted hash; :mod:`groupcoord.coordinator.credential_records`). A new record kind in
  rows of the existing schema, so the step is a no-op; the bump keeps a groupcoord of format 4, which would refuse
  the unknown kind on load, from opening such a log (it fails at the marker instead, with a clear message).
- **6**: the record log may hold ACL bindings (``acl``: key the binding's seven fields, value ``{}`` or a
  tombstone; :mod:`groupcoord.coordinator.acl_records`), and the materialized state gains an ``acls`` table
  (:data:`groupcoord.state.schema.ACLS`). The new kind is rows of the record log's existing schema, and the ``acls``
  table is created by the lease holder's materializer at its first ACL (as every state table is at its first row),
  so the step changes no table; the bump keeps a groupcoord of format 5, which would refuse the unknown kind on
  load, from opening such a log.

A step is idempotent: a process that died half-way, or two processes migrating one root at once, leave the same
result. :func:`migrate_tables` runs the steps; the caller writes the new marker after it returns. A root may be a
local directory or an S3 location: the steps list and open its tables through :mod:`groupcoord.storage.tables`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pyarrow as pa
import pyarrow.fs as pa_fs
from deltalake import Schema
from deltalake.exceptions import CommitFailedError, DeltaError

from groupcoord.storage.location import as_location
from groupcoord.storage.tables import Where, is_table, open_table, table_filesystem

log = logging.getLogger("groupcoord.state_format")

STATE_FORMAT_VERSION = 6
"""The format this groupcoord writes."""

HEADER_TYPE = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
"""One record header: a UTF-8 key and a nullable value, as on Kafka's wire and in Spark's Kafka source."""

FORMAT2_TOPIC_LOG_COLUMNS = pa.schema([
    pa.field("headers", pa.list_(HEADER_TYPE), nullable=True),
    pa.field("timestamp_type", pa.int32(), nullable=True),
    pa.field("compression", pa.string(), nullable=True),
])
"""The columns format 2 added to every topic log (nullable: rows of format 1 have none)."""

TOPICS_DIR = "topics"


def _add_topic_log_columns(root: Where) -> None:
    """Format 1 to 2: add :data:`FORMAT2_TOPIC_LOG_COLUMNS` to every topic log under ``root/topics``."""
    location = as_location(root)
    listing = table_filesystem(location).get_file_info(pa_fs.FileSelector(TOPICS_DIR, allow_not_found=True))
    for name in sorted(entry.base_name for entry in listing if entry.type == pa_fs.FileType.Directory):
        path = location / TOPICS_DIR / name
        if is_table(path):
            add_missing_columns(path, FORMAT2_TOPIC_LOG_COLUMNS)


def add_missing_columns(path: Where, columns: pa.Schema) -> bool:
    """Add those of ``columns`` that the Delta table at ``path`` lacks; ``True`` if this call added any.

    A concurrent migrator may add them first: its commit wins, this one re-reads and finds nothing left to add.
    """
    for _ in range(3):
        table = open_table(path)
        present = set(table.schema().to_arrow().names)
        missing = [field for field in columns if field.name not in present]
        if not missing:
            return False
        try:
            table.alter.add_columns(Schema.from_arrow(pa.schema(missing)).fields)
        except (CommitFailedError, DeltaError) as exc:
            log.info("adding columns to %s lost to a concurrent writer, re-reading: %s", path, exc)
            continue
        log.info("added columns %s to %s", ", ".join(f.name for f in missing), path)
        return True
    raise DeltaError(f"could not add columns to {path}: concurrent writers kept changing its schema")


def _consumer_group_record_kinds(root: Where) -> None:
    """Format 2 to 3: nothing to change. Format 3 only adds record kinds (consumer groups, KIP-848) to rows of the
    record log's existing schema; see the module's history."""


def _classic_members_in_consumer_groups(root: Where) -> None:
    """Format 3 to 4: nothing to change. Format 4 only adds an optional field to a record kind of format 3 (the
    classic-protocol metadata of a consumer group's member); see the module's history."""


def _user_credentials(root: Where) -> None:
    """Format 4 to 5: nothing to change. Format 5 only adds a record kind (users' credentials) to rows of the
    record log's existing schema; see the module's history."""


def _acl_records(root: Where) -> None:
    """Format 5 to 6: nothing to change. Format 6 only adds a record kind (ACL bindings) to rows of the record log's
    existing schema, and a state table its materializer creates at the first ACL; see the module's history."""


STEPS: dict[int, Callable[[Where], None]] = {
    2: _add_topic_log_columns,
    3: _consumer_group_record_kinds,
    4: _classic_members_in_consumer_groups,
    5: _user_credentials,
    6: _acl_records,
}
"""The step that brings a root from format ``n - 1`` to format ``n``."""


def migrate_tables(root: Where, found: int) -> None:
    """Bring the tables of the state root at ``root`` from format ``found`` to :data:`STATE_FORMAT_VERSION`."""
    for version in range(found + 1, STATE_FORMAT_VERSION + 1):
        log.info("migrating state root %s from format %d to %d", root, version - 1, version)
        STEPS[version](root)
