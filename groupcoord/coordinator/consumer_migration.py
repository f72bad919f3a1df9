"""Online migration between the two group types (Kafka's ``group.consumer.migration.policy``, KIP-848).

**Upgrade.** A classic group with members whose first member rolls to ``group.protocol=consumer`` becomes a
consumer group at once (Kafka 4.4's ``GroupMetadataManager.convertToConsumerGroup`` and
``ConsumerGroup.fromClassicGroup``): the group epoch and the target's epoch are the classic generation, and every
classic member becomes a member of the classic protocol inside the consumer group, at that epoch, STABLE, owning what
its classic assignment gave it (each partition at that epoch), with its subscription, session timeout and protocols
kept (:class:`~groupcoord.group.consumer_member.ClassicMemberMetadata`). The conversion is records that already
exist: the classic group's tombstone, then the consumer group's member, target and epoch records. Its offsets stay.
JoinGroups and SyncGroups the classic group held are answered REBALANCE_IN_PROGRESS, so those members rejoin the
consumer group; the joining heartbeat then bumps the group epoch as any new member does, and the classic members
learn of it from their next Heartbeat (REBALANCE_IN_PROGRESS) and rejoin through JoinGroup and SyncGroup
(:mod:`groupcoord.coordinator.consumer_classic`).

Refused, as in Kafka, with GROUP_ID_NOT_FOUND and Kafka's message: the policy does not allow upgrades, the group's
protocol type is not ``consumer``, it has more members than ``group.consumer.max.size``, a member's subscription or
assignment does not decode, or an assignment carries user data (a custom assignor's, which the consumer protocol
would lose).

**Downgrade.** When the last member of the consumer protocol leaves (a leave, a session or rebalance timeout) and
members of the classic protocol remain, the consumer group becomes a classic group (``convertToClassicGroup`` and
``ClassicGroup.fromConsumerGroup``): its generation is the group epoch, its members the classic ones with their
protocols and their partitions in the target assignment as their assignment, the protocol the members vote for,
Stable; then it
prepares a rebalance, as Kafka does, so the members rejoin the classic way. Not when the policy does not allow
downgrades or more members remain than ``group.max.size``: the group then stays a consumer group. A classic static
member replacing the last consumer-protocol member under its instance id downgrades the group too, at once and without
a rebalance unless it subscribes to other topics (Kafka's "with stale assignment"): it takes the replaced member's
share of the target.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from uuid import UUID

from groupcoord.coordinator import rebalance
from groupcoord.coordinator.consumer_records import (
    member_tombstones,
    new_consumer_group_epoch_tombstone,
    new_target_epoch_tombstone,
    new_target_member_tombstone,
)
from groupcoord.coordinator.consumer_replay import consumer_group_records
from groupcoord.coordinator.context import CoordinatorContext, ParkedClassicJoin, consumer_assignment_key
from groupcoord.coordinator.records import new_group_metadata_record, new_group_tombstone
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import (
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
    partition_epochs,
)
from groupcoord.group.group import ClassicGroup
from groupcoord.group.member import Member
from groupcoord.group.metadata import GroupInvariantError
from groupcoord.group.state import GroupState
from groupcoord.protocol.consumer_protocol import PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from groupcoord.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.protocol.responses import ConsumerGroupHeartbeatResponse

log = logging.getLogger("groupcoord.coordinator.migration")


# --- names and ids -----------------------------------------------------------------------------------------------

def partitions_by_id(ctx: CoordinatorContext, partitions: tuple[TopicPartitions, ...]) -> dict[UUID, set[int]]:
    """ConsumerProtocol partitions (by topic name) by topic id; topics the coordinator has no id for are dropped,
    as Kafka drops topics missing from its metadata image."""
    by_id: dict[UUID, set[int]] = {}
    for entry in partitions:
        topic_id = ctx.topic_ids.get(entry.topic)
        if topic_id is not None:
            by_id.setdefault(topic_id, set()).update(entry.partitions)
    return by_id


def partitions_by_name(ctx: CoordinatorContext, partitions: Mapping[UUID, frozenset[int]]
                       ) -> tuple[TopicPartitions, ...]:
    """Partitions by topic id as ConsumerProtocol partitions by topic name (ids without a name dropped)."""
    names = {topic_id: name for name, topic_id in ctx.topic_ids.items()}
    return tuple(TopicPartitions(names[topic_id], tuple(sorted(ids)))
                 for topic_id, ids in sorted(partitions.items(), key=lambda item: names.get(item[0], ""))
                 if topic_id in names)


def classic_assignment(ctx: CoordinatorContext, member: ConsumerGroupMember,
                       partitions: Mapping[UUID, frozenset[int]] | None = None) -> bytes:
    """``partitions`` (by default the member's own) as a ConsumerProtocol assignment, at the version of the
    subscription the member offered first (Kafka's ``prepareAssignment``)."""
    assert member.classic is not None
    try:
        version = decode_subscription(member.classic.protocols[0].metadata).version
    except ConsumerProtocolError:
        version = 0
    chosen = member.assigned_partitions if partitions is None else partitions
    return encode_assignment(Assignment(version=version, partitions=partitions_by_name(ctx, chosen)))


# --- upgrade -----------------------------------------------------------------------------------------------------

def upgrade_classic_group(ctx: CoordinatorContext, classic: ClassicGroup, now_ms: int) -> list[str]:
    """Turn the live classic group ``classic`` (with members) into a consumer group; returns the ids of its members,
    whose sessions the caller starts. Raises GROUP_ID_NOT_FOUND, writing nothing, when the upgrade is refused."""
    group_id = classic.group_id
    _throw_if_upgrade_refused(ctx, classic)
    converted = ConsumerGroup(group_id)
    try:
        for member in classic.members.values():
            converted.update_member(_converted_member(ctx, classic, member))
            converted.set_target_assignment(member.member_id, converted.members[member.member_id].assigned_partitions)
    except GroupInvariantError:
        raise ProtocolError(Errors.GROUP_ID_NOT_FOUND, _malformed(group_id)) from None
    converted.set_group_epoch(classic.generation_id)
    converted.set_target_assignment_epoch(classic.generation_id)
    for member in [*classic.members.values()]:
        rebalance.answer_parked(ctx, member, Errors.REBALANCE_IN_PROGRESS)
    if ctx.hard.group(group_id) is not None:
        ctx.append(new_group_tombstone(group_id))
    for record in consumer_group_records(converted):
        ctx.append(record)
    classic.transition_to(GroupState.DEAD, now_ms)
    ctx.forget_group(classic)
    log.info("group %s: converted the classic group (generation %d, %d members) to a consumer group", group_id,
             classic.generation_id, len(converted.members))
    return sorted(converted.members)


def _throw_if_upgrade_refused(ctx: CoordinatorContext, classic: ClassicGroup) -> None:
    group_id = classic.group_id
    if not ctx.config.consumer_group_migration_policy.upgrade_enabled:
        raise ProtocolError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                                                       "because online upgrade is disabled.")
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise ProtocolError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                                                       "because the group does not use the consumer embedded protocol.")
    if classic.size > ctx.config.consumer_group_max_size:
        raise ProtocolError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                                                       "because the group size exceeds the consumer group maximum "
                                                       "size.")


def _malformed(group_id: str) -> str:
    return (f"Cannot upgrade classic group {group_id} to consumer group because the embedded consumer protocol is "
            "malformed.")


def _converted_member(ctx: CoordinatorContext, classic: ClassicGroup, member: Member) -> ConsumerGroupMember:
    """A classic member as a member of the classic protocol in the consumer group, at the generation's epoch."""
    group_id = classic.group_id
    try:
        subscription = decode_subscription(member.metadata(classic.protocol_name or member.protocols[0].name))
        assignment = decode_assignment(member.assignment)
    except (ConsumerProtocolError, KeyError, IndexError):
        raise ProtocolError(Errors.GROUP_ID_NOT_FOUND, _malformed(group_id)) from None
    if assignment.user_data:
        raise ProtocolError(
            Errors.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {group_id} to consumer group because an unsupported custom assignor is "
            "in use. Please refer to the documentation or switch to a default assignor before re-attempting the "
            "upgrade.")
    epoch = classic.generation_id
    return ConsumerGroupMember(
        member_id=member.member_id, member_epoch=epoch, previous_member_epoch=epoch, state=MemberState.STABLE,
        instance_id=member.group_instance_id, rack_id=subscription.rack_id,
        rebalance_timeout_ms=member.rebalance_timeout_ms, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=frozenset(subscription.topics),
        assigned_with_epochs=partition_epochs(partitions_by_id(ctx, assignment.partitions), epoch),
        classic=ClassicMemberMetadata(session_timeout_ms=member.session_timeout_ms, protocols=member.protocols))


# --- downgrade ---------------------------------------------------------------------------------------------------

def downgrade_allowed(ctx: CoordinatorContext, group: ConsumerGroup, leaving: frozenset[str], *,
                      replaced_by_classic: bool = False) -> bool:
    """True when removing ``leaving`` leaves only members of the classic protocol (at least one, unless a classic
    member takes the leaving one's place: ``replaced_by_classic``) and the policy and ``group.max.size`` allow the
    group to become a classic group (Kafka's ``validateOnlineDowngradeWithFencedMembers`` and
    ``validateOnlineDowngradeWithReplacedMember``)."""
    remaining = [m for member_id, m in group.members.items() if member_id not in leaving]
    if not (remaining or replaced_by_classic) or not all(m.uses_classic_protocol for m in remaining):
        return False
    if not ctx.config.consumer_group_migration_policy.downgrade_enabled:
        log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is disabled.",
                 group.group_id)
        return False
    if len(remaining) + replaced_by_classic > ctx.config.group_max_size:
        log.info("Cannot downgrade consumer group %s to classic group because its group size is greater than "
                 "classic group max size.", group.group_id)
        return False
    return True


def downgrade_to_classic_group(ctx: CoordinatorContext, group: ConsumerGroup, leaving: frozenset[str],
                               now_ms: int, *, joining: tuple[ConsumerGroupMember, str] | None = None,
                               rebalance_now: bool = True) -> ClassicGroup:
    """Replace the consumer group by a classic group of its remaining (classic) members, Stable at the group epoch,
    then prepare a rebalance unless ``rebalance_now`` is off (see the module docs); ``joining`` is a classic static
    member taking the place of the member it names (with that member's share of the target). The caller checked
    :func:`downgrade_allowed` and stopped the members' consumer-group timers. Returns the classic group."""
    group_id = group.group_id
    value = _classic_generation(ctx, group, leaving, now_ms, joining).to_metadata_value()
    for parked in ctx.parked_heartbeats.pop(group_id, []):
        if isinstance(parked, ParkedClassicJoin):
            parked.fail(Errors.REBALANCE_IN_PROGRESS, None)
        else:
            ctx.respond(parked.token, ConsumerGroupHeartbeatResponse(
                error=Errors.UNKNOWN_MEMBER_ID, error_message=f"Group {group_id} is not a consumer group."))
    ctx.pending_targets.pop(group_id, None)
    ctx.last_targets_ms.pop(group_id, None)
    ctx.timers.cancel(consumer_assignment_key(group_id))
    for member_id in sorted(group.members):
        for record in member_tombstones(group, member_id):
            ctx.append(record)
    for member_id in sorted(group.target_assignment):
        ctx.append(new_target_member_tombstone(group_id, member_id))
    ctx.append(new_target_epoch_tombstone(group_id))
    ctx.append(new_consumer_group_epoch_tombstone(group_id))
    ctx.append(new_group_metadata_record(group_id, value))
    classic = ClassicGroup.from_metadata_value(group_id, value)
    ctx.register_group(classic)
    for member in classic.members.values():
        rebalance.heartbeat(ctx, classic, member, now_ms)
    log.info("group %s: converted the consumer group to a classic group (generation %d)", group_id,
             classic.generation_id)
    if rebalance_now:
        rebalance.prepare_rebalance(ctx, classic, now_ms, f"Downgrade group {group_id} from consumer to classic for "
                                                          "member leaving.")
    return classic


def _classic_generation(ctx: CoordinatorContext, group: ConsumerGroup, leaving: frozenset[str], now_ms: int,
                        joining: tuple[ConsumerGroupMember, str] | None) -> ClassicGroup:
    """The classic group a downgrade writes: the remaining members, in member-id order (the first leads), then the
    joining member, each assigned its share of the consumer group's target (the joining member the share of the
    member it replaces), as Kafka's ``ClassicGroup.fromConsumerGroup``."""
    classic = ClassicGroup(group.group_id, now_ms=now_ms)
    classic.generation_id = group.group_epoch
    members = [(m, group.target_assignment_of(member_id)) for member_id, m in sorted(group.members.items())
               if member_id not in leaving]
    if joining is not None:
        members.append((joining[0], group.target_assignment_of(joining[1])))
    for member, target in members:
        if member.classic is None:
            continue
        classic.add(Member(
            member_id=member.member_id, group_instance_id=member.instance_id, client_id=member.client_id,
            client_host=member.client_host, rebalance_timeout_ms=member.rebalance_timeout_ms,
            session_timeout_ms=member.classic.session_timeout_ms, protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=member.classic.protocols, assignment=classic_assignment(ctx, member, target)))
    classic.protocol_name = classic.select_protocol()
    return classic
