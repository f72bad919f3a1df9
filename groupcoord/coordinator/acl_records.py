"""The record of one ACL binding, and its codec.

Kind ``acl``, key the binding's seven fields as JSON (``[resource type, name, pattern type, principal, host,
operation, permission]``, Kafka's numeric codes), value ``{}`` while the binding exists and ``None`` (a tombstone)
once deleted. Format 6 of the state root added this kind (:mod:`groupcoord.state_format`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from groupcoord.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType

ACL_KIND = "acl"


@dataclass(frozen=True)
class AclRecord:
    """``binding`` created (``present``) or deleted."""

    binding: AclBinding
    present: bool


def new_acl_record(binding: AclBinding) -> AclRecord:
    """The record creating ``binding`` (checked: a malformed binding never reaches the log)."""
    return AclRecord(binding.check(), True)


def new_acl_tombstone(binding: AclBinding) -> AclRecord:
    """The record deleting ``binding``."""
    return AclRecord(binding, False)


def acl_record_key(record: AclRecord) -> str:
    """The compaction key: the binding's fields as JSON."""
    b = record.binding
    return json.dumps([int(b.resource_type), b.name, int(b.pattern_type), b.principal, b.host, int(b.operation),
                       int(b.permission)], separators=(",", ":"))


def acl_record_payload(record: AclRecord) -> dict[str, Any] | None:
    """The JSON value of ``record`` (``None`` for a tombstone)."""
    return {} if record.present else None


def decode_acl_record(key: str, payload: dict[str, Any] | None) -> AclRecord:
    """The record stored under ``key`` with ``payload``; ``ValueError`` when malformed."""
    resource_type, name, pattern_type, principal, host, operation, permission = json.loads(key)
    binding = AclBinding(ResourceType(resource_type), str(name), PatternType(pattern_type), str(principal), str(host),
                         Operation(operation), Permission(permission))
    return new_acl_tombstone(binding) if payload is None else new_acl_record(binding)
