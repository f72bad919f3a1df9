"""Effects: work the coordinator asks its shell to do, and the shell's answers (server-side assignment).

Two kinds: :class:`NeedsAssignment` for a classic ``server-*`` group that completed its join, answered by
:class:`CompleteAssignment`; :class:`NeedsTargetAssignment` for a consumer group (KIP-848) whose group epoch is
ahead of its target assignment, answered by :class:`CompleteTargetAssignment`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar
from uuid import UUID

from groupcoord.protocol.consumer_protocol import TopicPartitions
from groupcoord.protocol.errors import ErrorCode, Errors


@dataclass(frozen=True, kw_only=True)
class AssignmentMember:
    """One member to assign: its subscription (``None`` when the metadata is not a ConsumerProtocol
    Subscription), the partitions it owns now, and its raw metadata for custom assignors."""

    member_id: str
    group_instance_id: str | None
    topics: tuple[str, ...] | None
    owned: tuple[TopicPartitions, ...]
    metadata: bytes


@dataclass(frozen=True, kw_only=True)
class NeedsAssignment:
    """A ``server-<assignor>`` group completed its join: the shell must compute generation ``generation_id``'s
    assignment with ``assignor`` and submit it through ``complete_assignment``. Members are in join order."""

    group_id: str
    generation_id: int
    protocol_name: str
    assignor: str
    members: tuple[AssignmentMember, ...]

    @property
    def epoch(self) -> int:
        """The generation to assign (what :func:`newest_per_group` compares)."""
        return self.generation_id

    def failed(self, error: ErrorCode) -> CompleteAssignment:
        """The answer that fails this assignment with ``error``."""
        return CompleteAssignment(group_id=self.group_id, generation_id=self.generation_id, error=error)

    @property
    def subscriptions(self) -> dict[str, tuple[str, ...] | None]:
        """Subscribed topics by member id."""
        return {m.member_id: m.topics for m in self.members}

    @property
    def owned(self) -> dict[str, tuple[TopicPartitions, ...]]:
        """Currently owned partitions by member id."""
        return {m.member_id: m.owned for m in self.members}


@dataclass(frozen=True, kw_only=True)
class TargetMember:
    """One member of a consumer group to assign: its subscription (topic names, and the ids of those the
    coordinator knows), its rack, and its partitions in the current target (for sticky assignors)."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_ids: tuple[UUID, ...]
    current_target: Mapping[UUID, frozenset[int]] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, kw_only=True)
class SubscribedTopic:
    """A topic some member subscribes to: its id, name and partition count."""

    topic_id: UUID
    name: str
    partitions: int


@dataclass(frozen=True, kw_only=True)
class NeedsTargetAssignment:
    """A consumer group's epoch moved ahead of its target assignment: the shell must compute the target of
    ``group_epoch`` with the server assignor ``assignor`` and submit it through ``complete_target_assignment``.
    Members are sorted by id; ``topics`` are the subscribed topics the coordinator knows, sorted by name."""

    group_id: str
    group_epoch: int
    assignor: str
    members: tuple[TargetMember, ...]
    topics: tuple[SubscribedTopic, ...]

    @property
    def epoch(self) -> int:
        """The group epoch to assign (what :func:`newest_per_group` compares)."""
        return self.group_epoch

    def failed(self, error: ErrorCode) -> CompleteTargetAssignment:
        """The answer that fails this target assignment with ``error`` (the group keeps its old target)."""
        return CompleteTargetAssignment(group_id=self.group_id, group_epoch=self.group_epoch, error=error)


@dataclass(frozen=True, kw_only=True)
class CompleteTargetAssignment:
    """The shell's answer to :class:`NeedsTargetAssignment`: each member's partitions by topic id (members left
    out get none), or an ``error`` (the group keeps its old target; its waiting heartbeats get the error)."""

    group_id: str
    group_epoch: int
    assignment: Mapping[str, Mapping[UUID, frozenset[int]]] | None = None
    error: ErrorCode = Errors.NONE


Effect = NeedsAssignment | NeedsTargetAssignment
"""Any effect the coordinator emits."""

E = TypeVar("E", NeedsAssignment, NeedsTargetAssignment)


def newest_per_group(batch: Sequence[E]) -> list[E]:
    """The newest generation's (or group epoch's) effect of each group in ``batch``, in first-seen group order.

    Effects pile up while an assignment runs (a join during a slow first assignment starts the next generation), so
    one batch can hold several generations of one group. Only the newest can still complete: the core drops an
    answer for a stale generation, and assigning both in one batched call would give the group's members twice.
    """
    newest: dict[str, E] = {}
    for effect in batch:
        seen = newest.get(effect.group_id)
        if seen is None or effect.epoch >= seen.epoch:
            newest[effect.group_id] = effect
    return list(newest.values())


@dataclass(frozen=True, kw_only=True)
class CompleteAssignment:
    """The shell's answer to :class:`NeedsAssignment`: an assignment per member id (encoded ConsumerProtocol
    Assignment bytes; members left out get an empty assignment), or an ``error`` for every member."""

    group_id: str
    generation_id: int
    assignments: Mapping[str, bytes] | None = None
    error: ErrorCode = Errors.NONE


EffectAnswer = CompleteAssignment | CompleteTargetAssignment
"""The shell's answer to an effect."""
