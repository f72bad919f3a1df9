"""``groupcoord acls``: add, list and remove ACLs, in the style of ``kafka-acls.sh``.

``add`` creates one binding per resource, principal, host and operation (``--allow-principal User:alice
--operation Read --topic orders --group g``); ``remove`` deletes what the same options match (no principal: every
ACL of the resources); ``list`` reads the state root. ``--resource-pattern-type`` is ``literal`` (the default) or
``prefixed``, and for ``list`` and ``remove`` also ``match`` (every pattern applying to the name) or ``any``. Writes go
through the lease holder, or take the lease (docs/security.md). Bad input is one ``groupcoord: error:`` line, exit 2
for the command line, 1 otherwise, and changes nothing.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from groupcoord.cli.common import config_from_args
from groupcoord.cli.errors import UsageError
from groupcoord.cli.groups import open_root
from groupcoord.cli.users import admin_call
from groupcoord.security.acls import (
    CLUSTER_NAME,
    WILDCARD,
    AclBinding,
    AclError,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    camel,
    check_principal,
    enum_named,
)

if TYPE_CHECKING:
    from groupcoord.security.acl_store import AclStore

PATTERN_TYPES = ("literal", "prefixed", "match", "any")


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add ``acls`` and its subcommands."""
    acls = subparsers.add_parser("acls", help="add, list and remove ACLs (kafka-acls.sh style)",
                                 description="Manage the ACLs the authorizer checks (spark.groupcoord.authorizer."
                                             "enabled); they live in the state root.")
    acls.set_defaults(func=_missing_subcommand)
    commands = acls.add_subparsers(dest="acls_command", metavar="SUBCOMMAND", parser_class=type(acls))
    for name, func, text in (("add", _add, "create ACLs"), ("remove", _remove, "delete the ACLs the options match"),
                             ("list", _list, "the ACLs the options match (all by default)")):
        command = commands.add_parser(name, parents=[parent], help=text)
        _resource_options(command)
        _entry_options(command)
        command.set_defaults(func=func)


def _resource_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--topic", action="append", default=[], metavar="NAME", help="a topic (or * for all)")
    command.add_argument("--group", action="append", default=[], metavar="NAME", help="a group (or * for all)")
    command.add_argument("--transactional-id", action="append", default=[], metavar="ID",
                         help="a transactional id (or * for all)")
    command.add_argument("--cluster", action="store_true", help="the cluster")
    command.add_argument("--resource-pattern-type", type=str.lower, choices=PATTERN_TYPES, default="literal",
                         help="literal (default), prefixed; for list and remove also match or any")


def _entry_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                         help="User:NAME (or User:*) to allow")
    command.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                         help="User:NAME (or User:*) to deny")
    command.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                         help="host of the allowed principals (default *)")
    command.add_argument("--deny-host", action="append", default=[], metavar="HOST",
                         help="host of the denied principals (default *)")
    command.add_argument("--operation", action="append", default=[], metavar="OPERATION",
                         help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                              "AlterConfigs, IdempotentWrite, All (default All)")


def _missing_subcommand(args: argparse.Namespace) -> int:
    raise UsageError("acls: choose a subcommand: add, list, remove")


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    resources = [(ResourceType.TOPIC, name) for name in args.topic]
    resources += [(ResourceType.GROUP, name) for name in args.group]
    resources += [(ResourceType.TRANSACTIONAL_ID, name) for name in args.transactional_id]
    if args.cluster:
        resources.append((ResourceType.CLUSTER, CLUSTER_NAME))
    for _, name in resources:
        if not name:
            raise UsageError(f"acls {args.acls_command}: a resource name is empty")
    return resources


def _operations(args: argparse.Namespace) -> list[Operation]:
    try:
        return [Operation(enum_named(Operation, text)) for text in args.operation] or [Operation.ALL]
    except AclError as exc:
        raise UsageError(f"acls {args.acls_command}: {exc}") from None


def _entries(args: argparse.Namespace) -> list[tuple[Permission, str, str]]:
    """``(permission, principal, host)`` of every principal named."""
    entries: list[tuple[Permission, str, str]] = []
    for permission, principals, hosts in ((Permission.ALLOW, args.allow_principal, args.allow_host),
                                          (Permission.DENY, args.deny_principal, args.deny_host)):
        if hosts and not principals:
            raise UsageError(f"acls {args.acls_command}: --{permission.name.lower()}-host needs "
                             f"--{permission.name.lower()}-principal")
        for principal in principals:
            try:
                check_principal(principal)
            except AclError as exc:
                raise UsageError(f"acls {args.acls_command}: {exc}") from None
            entries.extend((permission, principal, host) for host in hosts or [WILDCARD])
    return entries


def _pattern(args: argparse.Namespace) -> PatternType:
    return PatternType(enum_named(PatternType, args.resource_pattern_type))


def _add(args: argparse.Namespace) -> int:
    from groupcoord.admin.acls import add_acls

    resources, entries, pattern = _resources(args), _entries(args), _pattern(args)
    if not resources:
        raise UsageError("acls add: name a resource: --topic, --group, --transactional-id or --cluster")
    if not entries:
        raise UsageError("acls add: name a principal: --allow-principal or --deny-principal")
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError("acls add: --resource-pattern-type must be literal or prefixed")
    bindings = [AclBinding(kind, name, pattern, principal, host, operation, permission)
                for kind, name in resources for permission, principal, host in entries
                for operation in _operations(args)]
    for binding in bindings:
        try:
            binding.check()
        except AclError as exc:
            raise UsageError(f"acls add: {exc}") from None
    admin_call(add_acls, open_root(args), config_from_args(args), bindings)
    for binding in bindings:
        print(f"Added ACL {binding.describe()}")
    return 0


def _filters(args: argparse.Namespace) -> list[AclFilter]:
    resources, entries, pattern = _resources(args), _entries(args), _pattern(args)
    operations = _operations(args) if args.operation else [Operation.ANY]
    targets: list[tuple[ResourceType, str | None]] = list(resources) or [(ResourceType.ANY, None)]
    pattern_filter = pattern if resources else PatternType.ANY
    if not entries:
        return [AclFilter(kind, name, pattern_filter, operation=operation)
                for kind, name in targets for operation in operations]
    return [AclFilter(kind, name, pattern_filter, principal, host, operation, permission)
            for kind, name in targets for permission, principal, host in entries for operation in operations]


def _remove(args: argparse.Namespace) -> int:
    from groupcoord.admin.acls import remove_acls

    if not _resources(args):
        raise UsageError("acls remove: name a resource: --topic, --group, --transactional-id or --cluster")
    filters = _filters_checked(args)
    deleted = admin_call(remove_acls, open_root(args), config_from_args(args), filters)
    for binding in deleted:
        print(f"Removed ACL {binding.describe()}")
    if not deleted:
        print("No ACL matched.")
    return 0


def _filters_checked(args: argparse.Namespace) -> list[AclFilter]:
    try:
        return _filters(args)
    except AclError as exc:
        raise UsageError(f"acls {args.acls_command}: {exc}") from None


def _list(args: argparse.Namespace) -> int:
    from groupcoord.admin.acls import stored_acls
    from groupcoord.admin.text_table import format_table

    filters = _filters_checked(args)
    store: AclStore = stored_acls(open_root(args))
    rows = [(camel(b.resource_type), b.name, camel(b.pattern_type), b.principal, b.host, camel(b.operation),
             camel(b.permission)) for b in sorted(store) if any(f.matches(b) for f in filters)]
    if rows:
        print(format_table(("RESOURCE-TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"),
                           rows))
    return 0
