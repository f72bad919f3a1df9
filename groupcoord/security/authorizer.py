"""Deciding whether a principal may perform an operation on a resource, as Kafka's StandardAuthorizer decides.

Super users may do everything. Otherwise the bindings that apply to the resource (:meth:`AclStore.applying_to`) are
read for the principal and ``User:*``, from the client's host or ``*``: a DENY for the operation (or ALL) wins over
any ALLOW; an ALLOW for the operation, for ALL, or for an operation that implies it (Read, Write, Delete and Alter
imply Describe; AlterConfigs implies DescribeConfigs: ALLOW only) allows. A resource no binding names at all is
allowed only with ``allow.everyone.if.no.acl.found``. The store is read on every call, so a revoked ACL counts from
the next request on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.config import Config
from groupcoord.config.binding import KeyedConfig, from_key
from groupcoord.security.acl_store import AclStore
from groupcoord.security.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

_IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE,
                                   Operation.ALTER, Operation.ALL}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS, Operation.ALL}),
}


def _principals(value: str) -> frozenset[str]:
    return frozenset(name.strip() for name in value.split(";") if name.strip())


@dataclass(frozen=True, kw_only=True)
class AuthorizerConfig(KeyedConfig):
    """Whether requests are checked, who is a super user, and what a resource without ACLs allows."""

    enabled: bool = field(default=False, metadata=from_key("authorizer.enabled"))
    super_users: frozenset[str] = field(default=frozenset(), metadata=from_key("super.users", convert=_principals))
    allow_if_no_acl: bool = field(default=False, metadata=from_key("allow.everyone.if.no.acl.found"))

    @classmethod
    def from_config(cls, config: Config | None = None) -> AuthorizerConfig:
        """The settings of ``config``."""
        return super().from_config(config)


class Authorizer:
    """Answers "may ``principal`` from ``host`` do ``operation`` on this resource?" from ``acls``."""

    def __init__(self, acls: AclStore, config: AuthorizerConfig) -> None:
        self.acls = acls
        self.config = config

    def allowed(self, principal: str, host: str, operation: Operation, resource_type: ResourceType,
                name: str) -> bool:
        """Whether the operation on the resource (a literal name) is allowed."""
        if principal in self.config.super_users:
            return True
        found = allow = False
        for binding in self.acls.applying_to(resource_type, name):
            found = True
            if not _applies(binding, principal, host):
                continue
            if binding.permission == Permission.DENY:
                if binding.operation in (operation, Operation.ALL):
                    return False
            elif not allow:
                allow = binding.operation in _IMPLIED_BY.get(operation, (operation, Operation.ALL))
        return allow or (not found and self.config.allow_if_no_acl)

    def allowed_on_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether the operation is allowed on at least one resource of ``resource_type`` (Kafka's
        ``authorizeByResourceType``: an ALLOW not covered by a DENY on the same or a wider pattern)."""
        if principal in self.config.super_users:
            return True
        bindings = [b for b in self.acls.of_type(resource_type) if _applies(b, principal, host)
                    and b.operation in (operation, Operation.ALL)]
        denies = [b for b in bindings if b.permission == Permission.DENY]
        if any(d.pattern_type == PatternType.LITERAL and d.name == WILDCARD for d in denies):
            return False
        for allow in bindings:
            if allow.permission == Permission.ALLOW and not any(_covers(deny, allow) for deny in denies):
                return True
        return False


def _applies(binding: AclBinding, principal: str, host: str) -> bool:
    return (binding.principal == principal or binding.principal == WILDCARD_PRINCIPAL) and (
        binding.host == WILDCARD or binding.host == host)


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Whether ``deny`` denies at least everything ``allow`` allows."""
    if deny.pattern_type == PatternType.PREFIXED:
        return allow.name.startswith(deny.name)
    return allow.pattern_type == PatternType.LITERAL and allow.name == deny.name
