"""Parity of the consumer group protocol (KIP-848): ConsumerGroupHeartbeat, ConsumerGroupDescribe and the offset APIs
of a consumer group, step by step against Kafka 4.4.0's coordinator.

Each target names topics by ids of its own; :meth:`~tests.parity.wire.Wire.schema_call` records them by topic name.
Member ids are made up by the scenario (ConsumerGroupHeartbeat v1 has the client generate them, KIP-1082), the same
on both sides. Lists the coordinators answer in hash order are compared sorted. Epochs are compared by their order of
appearance, not their values (:class:`EpochLabels`): a client only sends back the epoch it was given, and a new group's
first member starts at epoch 2 on Kafka 4.4 (at 1 when it joins with no topic), at 1 on groupcoord.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from groupcoord.protocol.consumer_protocol import decode_assignment
from tests.parity.observe import Observation, assert_parity
from tests.parity.targets import OTHER_TOPIC, TOPIC, Target, group_name
from tests.parity.wire import (
    RawMember,
    Wire,
    assignment,
    commit_partition,
    offset_commit,
    rebalance,
    versions_for,
)

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
LIST_GROUPS = 16
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
LEAVE_EPOCH = -1
TEMPORARY_LEAVE_EPOCH = -2
REBALANCE_TIMEOUT_MS = 30_000


def member_id(group: str, name: str) -> str:
    """A client-generated member id, the same on both sides (a uuid, as Kafka's clients make them)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{group}/{name}"))


_EPOCH_FIELDS = frozenset({"MemberEpoch", "GroupEpoch", "AssignmentEpoch"})
_EPOCHS_IN_MESSAGE = re.compile(r"(epoch|coordinator) \((\d+)\)")


class EpochLabels:
    """Names each positive epoch by its order of first appearance (``e1``, ``e2``...); 0, -1 and -2 mean what the
    protocol says (join, leave, leave for a while) and stay."""

    def __init__(self) -> None:
        self._labels: dict[int, str] = {}

    def label(self, epoch: int) -> str | int:
        """``epoch``'s label (or ``epoch`` itself when it is not positive)."""
        return self._labels.setdefault(epoch, f"e{len(self._labels) + 1}") if epoch > 0 else epoch

    def apply(self, value: Any, key: str = "") -> Any:
        """``value`` with every epoch field, and every ``epoch (N)`` of an error message, labelled."""
        if isinstance(value, dict):
            return {k: self.apply(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.apply(item, key) for item in value]
        if key in _EPOCH_FIELDS and isinstance(value, int):
            return self.label(value)
        if key == "ErrorMessage" and isinstance(value, str):
            return _EPOCHS_IN_MESSAGE.sub(lambda m: f"{m.group(1)} ({self.label(int(m.group(2)))})", value)
        return value


class ConsumerWire(Wire):
    """A raw connection speaking the consumer group protocol, with the target's topic ids at hand; it records answers
    with their epochs labelled (:class:`EpochLabels`)."""

    def __init__(self, target: Target, observation: Observation) -> None:
        super().__init__(target, observation)
        self.ids = self.topic_ids()
        self.by_name = {name: topic_id for topic_id, name in self.ids.items()}
        self.epochs = EpochLabels()

    def schema_call(self, label: str, api_key: int, version: int, body: Any, ids: Any, *,
                    hash_ordered: bool = False) -> dict[str, Any]:
        """:meth:`Wire.schema_call`, with the epochs of what it records labelled."""
        response = super().schema_call(label, api_key, version, body, ids, hash_ordered=hash_ordered)
        step, recorded = self.observation.steps[-1]
        self.observation.steps[-1] = (step, self.epochs.apply(recorded))
        return response

    def heartbeat(self, label: str, group: str, member: str, epoch: int, *, topics: list[str] | None = None,
                  owned: dict[str, list[int]] | None = None, regex: str | None = None,
                  instance_id: str | None = None, assignor: str | None = None,
                  rebalance_timeout_ms: int = -1) -> dict[str, Any]:
        """One ConsumerGroupHeartbeat v1; ``owned`` partitions by topic name (``None``: unchanged)."""
        body = {"GroupId": group, "MemberId": member, "MemberEpoch": epoch, "InstanceId": instance_id,
                "RackId": None, "RebalanceTimeoutMs": rebalance_timeout_ms, "SubscribedTopicNames": topics,
                "SubscribedTopicRegex": regex, "ServerAssignor": assignor,
                "TopicPartitions": None if owned is None else [
                    {"TopicId": self.by_name[name], "Partitions": parts} for name, parts in owned.items()]}
        return self.schema_call(label, CONSUMER_GROUP_HEARTBEAT, 1, body, self.ids, hash_ordered=True)

    def join(self, label: str, group: str, member: str, topics: list[str], **fields: Any) -> dict[str, Any]:
        """A first heartbeat (epoch 0) as Kafka's clients send it: subscription, rebalance timeout, nothing owned."""
        return self.heartbeat(label, group, member, 0, topics=topics, owned={},
                              rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, **fields)

    def owned_after(self, response: dict[str, Any]) -> dict[str, list[int]]:
        """The partitions a heartbeat response assigns, by topic name (what the member reports it owns next)."""
        assignment = response["Assignment"] or {"TopicPartitions": []}
        return {self.ids[t["TopicId"]]: sorted(t["Partitions"]) for t in assignment["TopicPartitions"]}

    def describe_consumer_group(self, label: str, *groups: str) -> dict[str, Any]:
        """ConsumerGroupDescribe v1 of ``groups``."""
        return self.schema_call(label, CONSUMER_GROUP_DESCRIBE, 1,
                                {"GroupIds": list(groups), "IncludeAuthorizedOperations": False}, self.ids,
                                hash_ordered=True)

    def commit_v(self, label: str, version: int, group: str, member: str, epoch: int,
                 offsets: dict[str, dict[int, int]]) -> dict[str, Any]:
        """OffsetCommit at ``version`` (v10: topics by id) with the member's epoch."""
        by_id = version >= 10
        body = {"GroupId": group, "GenerationIdOrMemberEpoch": epoch, "MemberId": member, "GroupInstanceId": None,
                "Topics": [{**({"TopicId": self.by_name[name]} if by_id else {"Name": name}), "Partitions": [
                    {"PartitionIndex": p, "CommittedOffset": o, "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}
                    for p, o in sorted(parts.items())]} for name, parts in offsets.items()]}
        return self.schema_call(label, OFFSET_COMMIT, version, body, self.ids, hash_ordered=True)

    def fetch_v(self, label: str, version: int, group: str, member: str | None, epoch: int,
                topics: dict[str, list[int]] | None) -> dict[str, Any]:
        """OffsetFetch v9 or v10 of one group with the member's id and epoch."""
        key = "TopicId" if version >= 10 else "Name"
        wanted = None if topics is None else [
            {key: self.by_name[name] if version >= 10 else name, "PartitionIndexes": parts}
            for name, parts in topics.items()]
        body = {"Groups": [{"GroupId": group, "MemberId": member, "MemberEpoch": epoch, "Topics": wanted}],
                "RequireStable": False}
        return self.schema_call(label, OFFSET_FETCH, version, body, self.ids, hash_ordered=True)


def two_members_split_a_topic(target: Target, group: str) -> Observation:
    """The first member takes every partition; a second one joins; the first revokes what moves, and only then does
    the second get it (the revocation handshake); then the first leaves and the second takes everything."""
    observation = Observation()
    wire = ConsumerWire(target, observation)
    a, b = member_id(group, "a"), member_id(group, "b")
    try:
        first = wire.join("a joins", group, a, [TOPIC])
        epoch_a = first["MemberEpoch"]
        owned_a = wire.owned_after(first)
        joined = wire.join("b joins", group, b, [TOPIC])
        epoch_b = joined["MemberEpoch"]
        owned_b = wire.owned_after(joined)
        revoke = wire.heartbeat("a is told to revoke", group, a, epoch_a, owned=owned_a)
        epoch_a = revoke["MemberEpoch"]
        if revoke["Assignment"] is not None:
            owned_a = wire.owned_after(revoke)
        acked = wire.heartbeat("a reports the revocation done", group, a, epoch_a, owned=owned_a)
        epoch_a = acked["MemberEpoch"]
        granted = wire.heartbeat("b gets the released partitions", group, b, epoch_b, owned=owned_b)
        epoch_b = granted["MemberEpoch"]
        if granted["Assignment"] is not None:
            owned_b = wire.owned_after(granted)
        wire.heartbeat("b settles", group, b, epoch_b, owned=owned_b)
        wire.describe_consumer_group("the group, stable", group)
        wire.heartbeat("a leaves", group, a, LEAVE_EPOCH)
        taken = wire.heartbeat("b takes every partition", group, b, epoch_b, owned=owned_b)
        wire.heartbeat("a heartbeats after leaving", group, a, epoch_a)
        wire.describe_consumer_group("the group after a left", group)
        assert taken["ErrorCode"] == 0
    finally:
        wire.close()
    return observation


def test_two_members_split_a_topic(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, two_members_split_a_topic, group_name(request.node.name))


def fenced_and_refused_heartbeats(target: Target, group: str) -> Observation:
    """Kafka's errors, with their messages, for heartbeats it refuses: an epoch ahead of the member's, an older one,
    an unknown member, a join with no subscription or no rebalance timeout, an unknown assignor, a regular
    expression RE2 cannot compile, both a regex and names, an empty group id, an empty member id."""
    observation = Observation()
    wire = ConsumerWire(target, observation)
    a = member_id(group, "a")
    try:
        first = wire.join("a joins", group, a, [TOPIC, OTHER_TOPIC])
        narrowed = wire.heartbeat("a drops a topic", group, a, first["MemberEpoch"], topics=[TOPIC],
                                  owned=wire.owned_after(first))
        widened = wire.heartbeat("a takes it again", group, a, narrowed["MemberEpoch"], topics=[TOPIC, OTHER_TOPIC],
                                 owned=wire.owned_after(narrowed))
        epoch = widened["MemberEpoch"]
        wire.heartbeat("an epoch ahead of the member's", group, a, epoch + 1)
        wire.heartbeat("an epoch behind, not the previous one", group, a, first["MemberEpoch"])
        wire.heartbeat("an unknown member", group, member_id(group, "stranger"), epoch)
        wire.heartbeat("a join without a subscription", group, member_id(group, "b"), 0, owned={},
                       rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)
        wire.heartbeat("a join without a rebalance timeout", group, member_id(group, "c"), 0, topics=[TOPIC], owned={})
        wire.join("an unknown server assignor", group, member_id(group, "d"), [TOPIC], assignor="no-such-assignor")
        wire.join("a regex RE2 cannot compile", group, member_id(group, "e"), [], regex="orders(")
        wire.heartbeat("an empty group id", "", member_id(group, "f"), 0, topics=[TOPIC], owned={},
                       rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)
        wire.heartbeat("an empty member id", group, "", 0, topics=[TOPIC], owned={},
                       rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)
        wire.heartbeat("the member is still there", group, a, epoch, owned=wire.owned_after(widened))
        wire.heartbeat("a leaves", group, a, LEAVE_EPOCH)
    finally:
        wire.close()
    return observation


def test_fenced_and_refused_heartbeats(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, fenced_and_refused_heartbeats, group_name(request.node.name))


def commits_with_member_epochs(target: Target, group: str) -> Observation:
    """A consumer group's offsets: commits at the member's epoch (v9 by name and v10 by id), a stale and a future
    epoch, an unknown member, a simple commit to the group, a commit below v9; fetches with and without the member's
    epoch; all of it read back."""
    observation = Observation()
    wire = ConsumerWire(target, observation)
    a = member_id(group, "a")
    try:
        first = wire.join("a joins", group, a, [TOPIC])
        epoch = first["MemberEpoch"]
        wire.heartbeat("a settles", group, a, epoch, owned=wire.owned_after(first))
        wire.commit_v("commit at the member's epoch (v9)", 9, group, a, epoch, {TOPIC: {0: 10, 1: 11}})
        wire.commit_v("commit at the member's epoch (v10)", 10, group, a, epoch, {TOPIC: {2: 12}})
        wire.commit_v("an epoch ahead of the member's", 9, group, a, epoch + 1, {TOPIC: {0: 99}})
        wire.commit_v("an unknown member", 9, group, member_id(group, "stranger"), epoch, {TOPIC: {0: 99}})
        wire.commit_v("a simple commit to a consumer group", 9, group, "", -1, {TOPIC: {0: 99}})
        wire.commit_v("the member commits below v9", 8, group, a, epoch, {TOPIC: {0: 99}})
        wire.fetch_v("fetch with the member's epoch (v9)", 9, group, a, epoch, {TOPIC: [0, 1, 2]})
        wire.fetch_v("fetch with the member's epoch (v10)", 10, group, a, epoch, {TOPIC: [0, 1, 2]})
        wire.fetch_v("fetch with an epoch ahead", 9, group, a, epoch + 1, {TOPIC: [0]})
        wire.fetch_v("fetch as an unknown member", 10, group, member_id(group, "stranger"), epoch, None)
        wire.fetch_v("fetch without a member (an admin)", 9, group, None, -1, None)
        wire.heartbeat("a leaves", group, a, LEAVE_EPOCH)
        wire.commit_v("a simple commit once the group is empty", 9, group, "", -1, {TOPIC: {0: 20}})
        wire.fetch_v("what is committed", 9, group, None, -1, None)
    finally:
        wire.close()
    return observation


def test_commits_with_member_epochs(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, commits_with_member_epochs, group_name(request.node.name))


def a_static_member_restarts(target: Target, group: str) -> Observation:
    """A static member leaves for a while (epoch -2) and comes back under its instance id with a new member id: it gets
    its partitions back without a new group epoch; then it leaves for good (epoch -1)."""
    observation = Observation()
    wire = ConsumerWire(target, observation)
    first_id, second_id = member_id(group, "first"), member_id(group, "second")
    try:
        first = wire.join("the static member joins", group, first_id, [TOPIC], instance_id="instance-1")
        wire.heartbeat("it settles", group, first_id, first["MemberEpoch"], owned=wire.owned_after(first))
        wire.heartbeat("it leaves for a while", group, first_id, TEMPORARY_LEAVE_EPOCH, instance_id="instance-1")
        wire.describe_consumer_group("the group while it is away", group)
        back = wire.join("it comes back with a new member id", group, second_id, [TOPIC], instance_id="instance-1")
        wire.join("another member claims the instance id", group, member_id(group, "third"), [TOPIC],
                  instance_id="instance-1")
        wire.heartbeat("the old member id", group, first_id, first["MemberEpoch"], instance_id="instance-1")
        wire.describe_consumer_group("the group once it is back", group)
        wire.heartbeat("it leaves for good", group, second_id, LEAVE_EPOCH, instance_id="instance-1")
        wire.describe_consumer_group("the group after it left", group)
        assert back["ErrorCode"] == 0
    finally:
        wire.close()
    return observation


def test_a_static_member_restarts(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, a_static_member_restarts, group_name(request.node.name))


def consumer_groups_among_the_others(target: Target, group: str) -> Observation:
    """ListGroups v5 filtered by type and state, DescribeGroups v5 of a consumer group, ConsumerGroupDescribe of a
    classic group and of a group that does not exist."""
    observation = Observation()
    wire = ConsumerWire(target, observation)
    classic = f"{group}-classic"
    a = member_id(group, "a")
    try:
        first = wire.join("a joins", group, a, [TOPIC])
        wire.heartbeat("a settles", group, a, first["MemberEpoch"], owned=wire.owned_after(first))
        wire.commit_v("a classic group by a simple commit", 9, classic, "", -1, {TOPIC: {0: 1}})
        for types in (["consumer"], ["classic"], [], ["Consumer"]):
            response = wire.schema_request(LIST_GROUPS, 5, {"StatesFilter": [], "TypesFilter": types})
            observation.add(f"ListGroups of types {types}", {
                "ErrorCode": response["ErrorCode"],
                "Groups": sorted((g for g in response["Groups"] if g["GroupId"] in (group, classic)),
                                 key=lambda g: g["GroupId"])})
        wire.describe("DescribeGroups of a consumer group", group)
        wire.describe_consumer_group("ConsumerGroupDescribe of both and of none", group, classic, f"{group}-none")
        wire.heartbeat("a leaves", group, a, LEAVE_EPOCH)
    finally:
        wire.close()
    return observation


def test_consumer_groups_among_the_others(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, consumer_groups_among_the_others, group_name(request.node.name))


def empty_groups_change_protocol_both_ways(target: Target, group: str) -> Observation:
    """Kafka's default migration policy (``bidirectional``) for empty groups: an empty classic group (offsets only)
    becomes a consumer group when a consumer-protocol member joins, keeping its offsets; once that member left, a
    classic JoinGroup makes it a classic group again, offsets still there."""
    observation = Observation()
    wire = ConsumerWire(target, observation)
    member = RawMember(target, observation, group, versions_for(9), "classic")
    a = member_id(group, "a")
    try:
        wire.commit("a simple commit makes an empty classic group", offset_commit(
            group, 9, {TOPIC: [commit_partition(0, 7, "")]}))
        first = wire.join("a consumer-protocol member joins it", group, a, [TOPIC])
        wire.heartbeat("it settles", group, a, first["MemberEpoch"], owned=wire.owned_after(first))
        wire.fetch_v("the offsets stayed", 9, group, a, first["MemberEpoch"], {TOPIC: [0]})
        wire.describe_consumer_group("now a consumer group", group)
        wire.heartbeat("it leaves", group, a, LEAVE_EPOCH)
        rebalance("a classic member joins the empty consumer group", [member])
        wire.describe("now a classic group again", group)
        wire.fetch_v("the offsets are still there", 9, group, None, -1, {TOPIC: [0]})
        member.leave("the classic member leaves")
    finally:
        member.close()
        wire.close()
    return observation


def test_empty_groups_change_protocol_both_ways(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, empty_groups_change_protocol_both_ways, group_name(request.node.name))


def a_live_classic_group_meets_the_consumer_protocol(target: Target, group: str) -> Observation:
    """A rolling upgrade and its way back (Kafka's default ``group.consumer.migration.policy``, ``bidirectional``): a
    classic group with a member meets a consumer-protocol member, which converts it to a consumer group; the classic
    member, told to rejoin, rejoins and syncs inside it: reporting the partitions it owns (a cooperative client's
    subscription), it first keeps its epoch and gives up what moves, then rejoins at the new epoch; the consumer
    member gets what was released; once it leaves, the group is a classic group again and its member rejoins the
    classic way."""
    observation = Observation()
    wire = ConsumerWire(target, observation)
    member = RawMember(target, observation, group, versions_for(9), "classic")
    a = member_id(group, "a")
    try:
        rebalance("a classic member forms the group", [member])
        member.owned = {TOPIC: [0, 1, 2]}
        joined = wire.join("a consumer-protocol member joins", group, a, [TOPIC])
        member.heartbeat("the classic member is told to rejoin")
        revoking = member.join("the classic member rejoins owning everything: it must revoke first")
        kept = member.sync("the classic member syncs what it keeps")
        member.owned = {tp.topic: list(tp.partitions) for tp in decode_assignment(kept.assignment).partitions}
        member.heartbeat("the classic member is told to rejoin once it revoked")
        moved_on = member.join("the classic member rejoins at the new epoch")
        member.sync("the classic member syncs at the new epoch")
        member.heartbeat("the classic member heartbeats at the new epoch")
        settled = wire.heartbeat("the consumer member gets the released partitions", group, a, joined["MemberEpoch"],
                                 owned=wire.owned_after(joined))
        wire.describe_consumer_group("the consumer group with a classic member", group)
        wire.describe("DescribeGroups of it", group)
        wire.heartbeat("the consumer member leaves", group, a, LEAVE_EPOCH)
        wire.describe("a classic group again, rebalancing", group)
        member.heartbeat("the classic member is told to rejoin the classic group")
        member.owned = None
        member.join("the classic member rejoins the classic group")
        member.sync("the classic member syncs", {member.member_id: assignment({TOPIC: [0, 1, 2]})})
        wire.describe("the classic group, stable", group)
        member.leave("the classic member leaves")
        assert settled["ErrorCode"] == 0 and revoking.generation_id < moved_on.generation_id
    finally:
        member.close()
        wire.close()
    return observation


def test_a_live_classic_group_meets_the_consumer_protocol(targets: tuple[Target, Target],
                                                          request: pytest.FixtureRequest) -> None:
    assert_parity(targets, a_live_classic_group_meets_the_consumer_protocol, group_name(request.node.name))


def a_classic_static_member_replaces_the_last_consumer_member(target: Target, group: str) -> Observation:
    """A rolling downgrade by instance id: a static classic group upgraded by a static consumer-protocol member, whose
    instance then comes back speaking the classic protocol. It replaces the last consumer-protocol member, and the
    group is a classic group at once, Stable at the group epoch, the newcomer holding the replaced member's
    partitions (Kafka's downgrade "with stale assignment")."""
    observation = Observation()
    wire = ConsumerWire(target, observation)
    classic = RawMember(target, observation, group, versions_for(9), "classic", instance_id="classic-1")
    restarted = RawMember(target, observation, group, versions_for(9), "restarted", instance_id="static-1")
    s = member_id(group, "s")
    try:
        rebalance("a static classic member forms the group", [classic])
        joined = wire.join("a static consumer-protocol member joins", group, s, [TOPIC], instance_id="static-1")
        classic.heartbeat("the classic member is told to rejoin")
        classic.join("the classic member rejoins")
        classic.sync("the classic member syncs")
        wire.heartbeat("the consumer member gets the released partitions", group, s, joined["MemberEpoch"],
                       owned=wire.owned_after(joined), instance_id="static-1")
        restarted.join("the static member comes back speaking the classic protocol")
        wire.describe("a classic group again, at once", group)
        classic.heartbeat("the other classic member heartbeats")
        restarted.sync("the restarted member syncs")
        restarted.leave("the restarted member leaves")
        classic.leave("the classic member leaves")
    finally:
        classic.close()
        restarted.close()
        wire.close()
    return observation


def test_a_classic_static_member_replaces_the_last_consumer_member(targets: tuple[Target, Target],
                                                                  request: pytest.FixtureRequest) -> None:
    assert_parity(targets, a_classic_static_member_replaces_the_last_consumer_member, group_name(request.node.name))
