"""ACL records to rows of the ``acls`` state table, and the deletions a rebuild owes the table.

A binding's enums are written by Kafka's names (``TOPIC``, ``PREFIXED``, ``READ``, ``ALLOW``), so the table reads as
``kafka-acls.sh --list`` prints. A creation is a row, a deletion a ``deleted`` row of the same key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from groupcoord.coordinator.acl_records import AclRecord, new_acl_tombstone
from groupcoord.coordinator.records import Record
from groupcoord.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType


def acl_columns(record: AclRecord) -> dict[str, Any]:
    """The data columns and ``deleted`` of ``record``'s row."""
    b = record.binding
    return {"resource_type": b.resource_type.name, "resource_name": b.name, "pattern_type": b.pattern_type.name,
            "principal": b.principal, "host": b.host, "operation": b.operation.name,
            "permission": b.permission.name, "deleted": not record.present}


def vanished_acls(shown: pa.Table, current: Iterable[Record]) -> list[AclRecord]:
    """Tombstones for the bindings the ``acls`` view ``shown`` holds that the whole state ``current`` lacks."""
    present = {record.binding for record in current if isinstance(record, AclRecord) and record.present}
    shown_bindings = {
        AclBinding(ResourceType[r["resource_type"]], r["resource_name"], PatternType[r["pattern_type"]],
                   r["principal"], r["host"], Operation[r["operation"]], Permission[r["permission"]])
        for r in shown.to_pylist()}
    return [new_acl_tombstone(binding) for binding in sorted(shown_bindings - present)]
