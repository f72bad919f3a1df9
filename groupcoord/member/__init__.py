"""The member client: join and sync, a heartbeat thread, rebalance callbacks, commits (``GroupMember``)."""

from __future__ import annotations

from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.member.config import MemberOptions
from groupcoord.member.errors import (
    CommitFailedError,
    CoordinatorRequestError,
    CoordinatorUnavailableError,
    FencedInstanceIdError,
    GroupMemberError,
    MemberClosedError,
)
from groupcoord.member.generation import NO_GENERATION, Generation
from groupcoord.member.listener import BaseRebalanceListener, RebalanceListener
from groupcoord.member.member import GroupMember, GroupMemberSettings, MemberState

__all__ = [
    "NO_GENERATION",
    "BaseRebalanceListener",
    "CommitFailedError",
    "CoordinatorRequestError",
    "CoordinatorUnavailableError",
    "FencedInstanceIdError",
    "Generation",
    "GroupMember",
    "GroupMemberError",
    "GroupMemberSettings",
    "MemberClosedError",
    "MemberOptions",
    "MemberState",
    "OffsetAndMetadata",
    "RebalanceListener",
    "TopicPartition",
]
