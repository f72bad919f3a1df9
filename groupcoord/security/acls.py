"""ACL bindings as Kafka defines them: resource patterns, access control entries, filters, and their wire codes.

A binding says that a principal (``User:alice``, or ``User:*`` for every user) from a host (``*`` or one address)
is allowed or denied an operation on the resources a pattern names: a LITERAL name (``*`` names every resource of
the type) or a PREFIXED one. Filters (DescribeAcls, DeleteAcls, ``groupcoord acls list|remove``) add ANY to every
field and MATCH to pattern types: the patterns that would apply to a named resource. The numbers are Kafka's
(``org.apache.kafka.common.resource``/``acl``), so the wire needs no translation.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"
"""The literal resource name that names every resource of its type, and the host that means any host."""

WILDCARD_PRINCIPAL = "User:*"
"""The principal an ACL names to apply to every user."""

CLUSTER_NAME = "kafka-cluster"
"""The one name of the CLUSTER resource, as in Kafka."""


class AclError(ValueError):
    """A binding or a filter that Kafka would refuse (INVALID_REQUEST on the wire); the message says why."""


class ResourceType(IntEnum):
    """Kafka's resource types (``ResourceType`` codes)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    """Kafka's resource pattern types (``PatternType`` codes); ANY and MATCH only in filters."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    """Kafka's ACL operations (``AclOperation`` codes); ANY only in filters."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    """Kafka's ACL permission types (``AclPermissionType`` codes); ANY only in filters."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


AUTHORIZABLE_RESOURCES = frozenset({ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                                    ResourceType.TRANSACTIONAL_ID})
"""The resource types an ACL may name here: those the served APIs check."""


def enum_named(enum: type[IntEnum], text: str) -> IntEnum:
    """The member of ``enum`` named ``text`` in any case, with or without ``_``/``-`` (``IdempotentWrite``,
    ``idempotent-write``); :class:`AclError` when there is none."""
    wanted = text.replace("_", "").replace("-", "").upper()
    for member in enum:
        if member.name.replace("_", "") == wanted:
            return member
    raise AclError(f"unknown {enum.__name__} {text!r}: one of "
                   f"{', '.join(m.name for m in enum if m.name not in ('UNKNOWN', 'ANY'))}")


def camel(member: IntEnum) -> str:
    """Kafka's printed name of an enum member (``IdempotentWrite``, ``Prefixed``)."""
    return "".join(part.capitalize() for part in member.name.split("_"))


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL: ``permission`` of ``principal`` from ``host`` for ``operation`` on the resources of
    ``resource_type`` that ``name`` (with ``pattern_type``) names."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def check(self) -> AclBinding:
        """``self`` when a coordinator may store it, else :class:`AclError` with Kafka's reason."""
        if self.resource_type not in AUTHORIZABLE_RESOURCES:
            raise AclError(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise AclError(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (Operation.UNKNOWN, Operation.ANY):
            raise AclError(f"Invalid operation {self.operation.name}")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise AclError(f"Invalid permissionType {self.permission.name}")
        if not self.name:
            raise AclError("Invalid empty resource name")
        if self.resource_type == ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            raise AclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        check_principal(self.principal)
        if not self.host:
            raise AclError("Invalid empty host")
        return self

    def describe(self) -> str:
        """One line in the style of kafka-acls.sh."""
        return (f"{camel(self.resource_type)}:{camel(self.pattern_type).upper()}:{self.name} "
                f"(principal={self.principal}, host={self.host}, operation={camel(self.operation)}, "
                f"permissionType={camel(self.permission)})")


def check_principal(principal: str) -> str:
    """``principal`` when it is ``Type:name`` (Kafka's principal syntax), else :class:`AclError`."""
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        raise AclError(f"Could not parse principal from `{principal}` (no colon is present separating the "
                       "principal type from the principal name)")
    return principal


@dataclass(frozen=True)
class AclFilter:
    """A filter of ACL bindings: ``None`` strings and ANY enums match everything; pattern type MATCH matches the
    patterns that apply to the resource ``name`` (its literal, the ``*`` literal, and the prefixes of it)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def check(self) -> AclFilter:
        """``self`` when it can match anything Kafka lets it match, else :class:`AclError`."""
        for value in (self.resource_type, self.pattern_type, self.operation, self.permission):
            if value.name == "UNKNOWN":
                raise AclError(f"Invalid filter: {type(value).__name__} UNKNOWN")
        return self

    def matches(self, binding: AclBinding) -> bool:
        """Whether ``binding`` passes this filter (Kafka's ``AclBindingFilter.matches``)."""
        return self.matches_pattern(binding) and self.matches_entry(binding)

    def matches_pattern(self, binding: AclBinding) -> bool:
        """Whether the resource pattern of ``binding`` passes (``ResourcePatternFilter.matches``)."""
        if self.resource_type != ResourceType.ANY and self.resource_type != binding.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != binding.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, binding.pattern_type):
            return self.name == binding.name
        if binding.pattern_type == PatternType.LITERAL:
            return self.name == binding.name or binding.name == WILDCARD
        return self.name.startswith(binding.name)

    def matches_entry(self, binding: AclBinding) -> bool:
        """Whether the access control entry of ``binding`` passes (``AccessControlEntryFilter.matches``)."""
        return ((self.principal is None or self.principal == binding.principal)
                and (self.host is None or self.host == binding.host)
                and self.operation in (Operation.ANY, binding.operation)
                and self.permission in (Permission.ANY, binding.permission))
