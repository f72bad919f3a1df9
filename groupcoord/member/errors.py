"""The member client's exceptions: few, and all exported from here."""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode, Errors

INSTANCE_PREFIX_KEY = "spark.groupcoord.instance.prefix"
"""The key that sets the instance-id prefix of Spark executor members (``groupcoord.spark``)."""


class GroupMemberError(Exception):
    """Base class of every error the member client raises."""


class CoordinatorRequestError(GroupMemberError):
    """The coordinator answered a request with a Kafka ``error``."""

    def __init__(self, error: ErrorCode, what: str) -> None:
        super().__init__(f"{what} failed with {error.name}: {error.description}")
        self.error = error


class CoordinatorUnavailableError(GroupMemberError):
    """No coordinator could be reached (or it does not serve): the caller backs off and rediscovers."""


class FencedInstanceIdError(GroupMemberError):
    """Another member joined with this member's ``group_instance_id``: fatal, this member must stop."""

    def __init__(self, group_id: str, group_instance_id: str | None) -> None:
        super().__init__(
            f"group {group_id}: static member {group_instance_id!r} was fenced ({Errors.FENCED_INSTANCE_ID.name}): "
            f"another member joined with the same group instance id; give every member a unique id "
            f"(Spark executor members use {INSTANCE_PREFIX_KEY}-<task index>, so set {INSTANCE_PREFIX_KEY} "
            f"differently for each application sharing the group)"
        )
        self.group_id = group_id
        self.group_instance_id = group_instance_id


class MemberClosedError(GroupMemberError):
    """The member was closed (or failed fatally) and cannot be used any more."""


class CommitFailedError(GroupMemberError):
    """An offset commit was refused because the group rebalanced or this member's generation is over, or it
    could not reach a coordinator in time."""
