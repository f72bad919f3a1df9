"""``throw_if_*`` helpers: checks that raise :class:`~groupcoord.protocol.errors.ProtocolError` before a handler
changes anything, so a rejected request always leaves state as it was."""

from __future__ import annotations

import re
from collections.abc import Mapping

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.group.group import ClassicGroup
from groupcoord.group.state import GroupState
from groupcoord.protocol.errors import Errors, ProtocolError

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def is_valid_topic_name(name: str) -> bool:
    """Kafka's topic name rule: 1-249 of ``[a-zA-Z0-9._-]``, and not ``.`` or ``..``."""
    return bool(_LEGAL_TOPIC.fullmatch(name)) and name not in (".", "..")


def throw_if_invalid_group_id(group_id: str) -> None:
    """An empty group id is INVALID_GROUP_ID.

    Kafka still accepts ``""`` in the offset and admin APIs for pre-0.9 ZooKeeper consumers; groupcoord has no
    such clients, so every API rejects it.
    """
    if not group_id:
        raise ProtocolError(Errors.INVALID_GROUP_ID, "the group id is empty")


def throw_if_invalid_session_timeout(config: CoordinatorConfig, session_timeout_ms: int) -> None:
    """The session timeout must lie within the broker's bounds."""
    if not config.min_session_timeout_ms <= session_timeout_ms <= config.max_session_timeout_ms:
        raise ProtocolError(
            Errors.INVALID_SESSION_TIMEOUT,
            f"{session_timeout_ms} ms is outside [{config.min_session_timeout_ms}, {config.max_session_timeout_ms}]")


def throw_if_dead(group: ClassicGroup) -> None:
    """A Dead group is being removed: the client should look the coordinator up again and retry."""
    if group.is_in(GroupState.DEAD):
        raise ProtocolError(Errors.COORDINATOR_NOT_AVAILABLE, f"group {group.group_id} is being removed")


def throw_if_not_current_member(group: ClassicGroup, member_id: str, group_instance_id: str | None) -> None:
    """FENCED_INSTANCE_ID for a zombie static member, UNKNOWN_MEMBER_ID for a stranger."""
    if group.is_static_member_fenced(group_instance_id, member_id):
        raise ProtocolError(Errors.FENCED_INSTANCE_ID, f"instance {group_instance_id} belongs to another member")
    if not group.has(member_id):
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"member {member_id!r} is not in group {group.group_id}")


def throw_if_illegal_generation(group: ClassicGroup, generation_id: int) -> None:
    """Older *and* newer generations are rejected (seed 000)."""
    if generation_id != group.generation_id:
        raise ProtocolError(Errors.ILLEGAL_GENERATION,
                            f"generation {generation_id} is not the group's {group.generation_id}")


def current_member_group(
    groups: Mapping[str, ClassicGroup], group_id: str, member_id: str, group_instance_id: str | None,
    generation_id: int,
) -> ClassicGroup:
    """The live group of a member of the current generation, as Heartbeat and SyncGroup require.

    Raises INVALID_GROUP_ID, UNKNOWN_MEMBER_ID (no such group or member), COORDINATOR_NOT_AVAILABLE (Dead),
    FENCED_INSTANCE_ID or ILLEGAL_GENERATION, in Kafka's order.
    """
    throw_if_invalid_group_id(group_id)
    group = groups.get(group_id)
    if group is None:
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"group {group_id} does not exist")
    throw_if_dead(group)
    throw_if_not_current_member(group, member_id, group_instance_id)
    throw_if_illegal_generation(group, generation_id)
    return group


def throw_if_invalid_instance_id(group_instance_id: str | None) -> None:
    """A group instance id, when given, may not be empty."""
    if group_instance_id is not None and not group_instance_id:
        raise ProtocolError(Errors.INVALID_REQUEST, "the group instance id is empty")
