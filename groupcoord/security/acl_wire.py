"""ACL bindings and filters as the fields of Kafka's DescribeAcls, CreateAcls and DeleteAcls messages, both ways.

The server's adapters read requests with :func:`binding_of` and :func:`filter_of`; groupcoord's admin client writes
them with :func:`creation_fields` and :func:`filter_fields`. A code outside Kafka's enums reads as UNKNOWN, which the
coordinator refuses with INVALID_REQUEST, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Any, TypeVar

from groupcoord.security.acls import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType

_E = TypeVar("_E", bound=IntEnum)


def _code(enum: type[_E], value: int) -> _E:
    try:
        return enum(value)
    except ValueError:
        return enum(0)  # UNKNOWN


def filter_of(body: Mapping[str, Any]) -> AclFilter:
    """The ACL filter of a DescribeAcls request or of one DeleteAcls filter."""
    return AclFilter(_code(ResourceType, body["ResourceTypeFilter"]), body["ResourceNameFilter"],
                     _code(PatternType, body["PatternTypeFilter"]), body["PrincipalFilter"], body["HostFilter"],
                     _code(Operation, body["Operation"]), _code(Permission, body["PermissionType"]))


def filter_fields(acl_filter: AclFilter) -> dict[str, Any]:
    """The fields of a DescribeAcls request or of one DeleteAcls filter for ``acl_filter``."""
    return {"ResourceTypeFilter": int(acl_filter.resource_type), "ResourceNameFilter": acl_filter.name,
            "PatternTypeFilter": int(acl_filter.pattern_type), "PrincipalFilter": acl_filter.principal,
            "HostFilter": acl_filter.host, "Operation": int(acl_filter.operation),
            "PermissionType": int(acl_filter.permission)}


def binding_of(creation: Mapping[str, Any]) -> AclBinding:
    """The binding one CreateAcls creation (or a DeleteAcls matching ACL) names (unchecked)."""
    return AclBinding(_code(ResourceType, creation["ResourceType"]), creation["ResourceName"],
                      _code(PatternType, creation.get("ResourcePatternType", creation.get("PatternType", 3))),
                      creation["Principal"], creation["Host"], _code(Operation, creation["Operation"]),
                      _code(Permission, creation["PermissionType"]))


def creation_fields(binding: AclBinding) -> dict[str, Any]:
    """One CreateAcls creation for ``binding``."""
    return {"ResourceType": int(binding.resource_type), "ResourceName": binding.name,
            "ResourcePatternType": int(binding.pattern_type), **acl_fields(binding)}


def acl_fields(binding: AclBinding) -> dict[str, Any]:
    """The access control entry of ``binding`` (DescribeAcls' and DeleteAcls' per-ACL fields)."""
    return {"Principal": binding.principal, "Host": binding.host, "Operation": int(binding.operation),
            "PermissionType": int(binding.permission)}


def resource_fields(binding: AclBinding) -> dict[str, Any]:
    """The resource pattern of ``binding`` (DescribeAcls' and DeleteAcls' per-resource fields)."""
    return {"ResourceType": int(binding.resource_type), "ResourceName": binding.name,
            "PatternType": int(binding.pattern_type)}
