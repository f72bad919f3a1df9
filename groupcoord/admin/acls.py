"""ACLs: reading them from the state root, and changing them through the lease holder.

:func:`stored_acls` replays the record log's ACL records (read-only, like ``users list``); changes go over the wire
as CreateAcls and DeleteAcls to the lease holder, or to this process holding the lease for the write
(:func:`groupcoord.admin.holder.admin_session`): whoever can write the state root is a super user.
"""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.admin.holder import AdminChangeError, admin_session
from groupcoord.admin.stored import stored_records
from groupcoord.config import Config
from groupcoord.coordinator.acl_records import ACL_KIND, decode_acl_record
from groupcoord.security.acl_store import AclStore
from groupcoord.security.acls import AclBinding, AclFilter
from groupcoord.state_root import StateRoot


class AclChangeError(AdminChangeError):
    """The coordinator refused an ACL change; the message is Kafka's reason in one line."""


def stored_acls(root: StateRoot) -> AclStore:
    """Every ACL binding as the record log holds it now."""
    acls = AclStore()
    for key, payload in stored_records(root, ACL_KIND):
        record = decode_acl_record(key, payload)
        if record.present:
            acls.add(record.binding)
        else:
            acls.remove(record.binding)
    return acls


def add_acls(root: StateRoot, config: Config, bindings: Sequence[AclBinding]) -> None:
    """Create ``bindings`` (all of them, or :class:`AclChangeError` naming the first refused)."""
    with admin_session(root, config) as client:
        for binding, (error, message) in zip(bindings, client.create_acls(bindings), strict=True):
            if error.is_error:
                raise AclChangeError(f"ACL {binding.describe()} refused: {error.name}"
                                     f"{f' ({message})' if message else ''}")


def remove_acls(root: StateRoot, config: Config, filters: Sequence[AclFilter]) -> list[AclBinding]:
    """Delete every binding ``filters`` match; the deleted bindings."""
    deleted: list[AclBinding] = []
    with admin_session(root, config) as client:
        for error, message, bindings in client.delete_acls(filters):
            if error.is_error:
                raise AclChangeError(f"ACL removal refused: {error.name}{f' ({message})' if message else ''}")
            deleted.extend(bindings)
    return deleted
