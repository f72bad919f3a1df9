"""The invariants of consumer groups (KIP-848), checked while a ``protocol="consumer"`` schedule runs, besides
invariants 2 (acknowledged offsets are never lost), 3 (fencing, by member epoch) and 6 (replay) of
:mod:`groupcoord.sim.invariants`, which hold for both protocols.

7. Ownership: no partition is owned by two running members at once, as the members themselves believe (and report
   in their heartbeats). A paused member is left out, as are a replaced process (``events.Restart``) and a stalled
   one (``events.Stall``: its application thread is stuck past its rebalance timeout) that the group no longer
   counts as members: the next heartbeat tells them, and their commits are fenced meanwhile (Kafka's consumer has
   the same window). Processes sharing a ``group.instance.id`` are one identity.
8. Revocation before reassignment: the coordinator gives a partition (in a heartbeat answer's assignment) to a new
   member only once its previous holder has revoked it, that is, sent a heartbeat that no longer reports it, or
   left the group (left with epoch -1 or, for a static member, -2; fenced by a session or rebalance timeout; or
   replaced by its instance's next incarnation). A holder is the last member the coordinator gave the partition to.
9. Epochs: the group epoch and the target assignment epoch never decrease, across coordinator crashes and replay
   too (a consumer group is hard state whole); every member is at an epoch no newer than the target's, which is
   no newer than the group's (a static member away at -2 aside); a member's epoch never decreases while it stays
   in the group; and the epochs a member is told (heartbeat answers) never decrease.
10. Subscriptions: once the group is settled, every member owns only partitions of topics it subscribes to.
11. Convergence: the group is *settled* when no member is paused, the group is Stable (every member reconciled at
    the target epoch, which is the group epoch), its members are exactly the running simulated members, each at
    the target epoch, owning exactly what the coordinator assigned it, with nothing in flight. Then every partition
    of every subscribed topic is owned by exactly one member subscribed to it. After the last event the world must
    settle within a bound.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from uuid import UUID

from groupcoord.coordinator import CoordinatorResult
from groupcoord.coordinator.records import OffsetCommitRecord
from groupcoord.group.consumer_group import ConsumerGroup, ConsumerGroupState
from groupcoord.group.consumer_member import LEAVE_GROUP_STATIC_MEMBER_EPOCH
from groupcoord.protocol import Errors
from groupcoord.protocol.requests import ConsumerGroupHeartbeatRequest, GroupRequest, OffsetCommitRequest
from groupcoord.protocol.responses import ConsumerGroupHeartbeatResponse, GroupResponse, OffsetCommitResponse
from groupcoord.sim.consumer import Key, SimConsumer
from groupcoord.sim.invariants import Checker, InvariantViolation, World

GROUP_ID = "g"


def consumers(world: World) -> list[SimConsumer]:
    """The consumer-protocol processes of ``world`` that are alive, by name."""
    return [m for _, m in sorted(world.members.items()) if isinstance(m, SimConsumer) and m.alive]


def named(world: World, partitions: Mapping[UUID, frozenset[int]]) -> set[Key]:
    """Partitions by topic id as (topic name, partition)."""
    names = {topic_id: name for name, topic_id in world.topic_ids().items()}
    return {(names[t], p) for t, ps in partitions.items() if t in names for p in ps}


class ConsumerChecker(Checker):
    """The checks of a consumer-protocol schedule (see the module docstring)."""

    convergence_invariant = "11"

    def __init__(self) -> None:
        super().__init__()
        self.holder: dict[Key, str] = {}  # partition -> the member id the coordinator last gave it to (invariant 8)
        self.instances: dict[str, str] = {}  # member id -> group.instance.id
        self.group_epoch = 0
        self.target_epoch = 0
        self.member_epochs: dict[str, int] = {}  # per member id in the group (invariant 9)
        self.told_epochs: dict[str, int] = {}  # per member id, the newest epoch a heartbeat answer carried

    # --- hooks the world calls ---------------------------------------------------------------------------------
    def on_send(self, world: World, request: GroupRequest) -> None:
        """Invariant 8's releases: a heartbeat that no longer reports a partition revoked it; a member leaving
        (epoch -1, or -2 for a static member's temporary leave) has given up everything it held: the process is
        closing, or its heartbeat thread lost its partitions (``events.Stall``)."""
        if not isinstance(request, ConsumerGroupHeartbeatRequest):
            return
        if request.instance_id is not None:
            self.instances[request.member_id] = request.instance_id
        if request.topic_partitions is None and not request.is_leave:
            return
        reported = named(world, {t: frozenset(ps) for t, ps in (request.topic_partitions or {}).items()})
        for key, holder in list(self.holder.items()):
            if holder == request.member_id and key not in reported:
                del self.holder[key]

    def on_answer(self, world: World, request: GroupRequest,
                  response: GroupResponse) -> None:
        """Invariant 8 for every partition a heartbeat answer gives, and invariant 9 for the epoch it tells."""
        if not isinstance(request, ConsumerGroupHeartbeatRequest) or not isinstance(
                response, ConsumerGroupHeartbeatResponse) or response.error != Errors.NONE:
            return
        member_id = response.member_id or request.member_id
        if response.member_epoch >= 0:
            told = self.told_epochs.get(member_id, 0)
            if response.member_epoch < told:
                raise InvariantViolation("9", f"member {member_id} was told epoch {response.member_epoch} after "
                                              f"{told}: {world.describe()}")
            self.told_epochs[member_id] = response.member_epoch
        if response.assignment is None:
            return
        group = world.coordinator.consumer_group(request.group_id)
        for key in sorted(named(world, response.assignment)):
            previous = self.holder.get(key)
            if previous is not None and previous != member_id and group is not None and group.has_member(previous) \
                    and not self._same_instance(previous, member_id):
                raise InvariantViolation("8", f"{key} was given to {member_id} while {previous} had not revoked it: "
                                              f"{world.describe()}")
            self.holder[key] = member_id

    def _same_instance(self, one: str, other: str) -> bool:
        instance = self.instances.get(one)
        return instance is not None and instance == self.instances.get(other)

    def on_request(self, request: GroupRequest, token: int, live_generation: int | None,
                   result: CoordinatorResult) -> None:
        """Invariant 3 for a consumer group: a commit by a non-member, or at an epoch newer than the member's
        (``live_generation`` here), is rejected for every partition and writes no offset. A commit at an older
        epoch is Kafka's to accept partition by partition (KIP-1251)."""
        if not isinstance(request, OffsetCommitRequest) or request.generation_id < 0:
            return
        self.commits_checked += 1
        if live_generation is not None and request.generation_id <= live_generation:
            return
        written = [r for r in result.records if isinstance(r, OffsetCommitRecord) and r.group_id == request.group_id]
        response = result.response_for(token)
        errors = ([p.error for t in response.topics for p in t.partitions]
                  if isinstance(response, OffsetCommitResponse) else [])
        if written or not errors or not all(e.is_error for e in errors):
            raise InvariantViolation("3", f"a commit at epoch {request.generation_id} by {request.member_id} was "
                                          f"accepted while the member is at {live_generation}: {errors} {written}")
        self.probes_rejected += 1

    # --- after every step --------------------------------------------------------------------------------------
    def check_step(self, world: World) -> None:
        """Every invariant that holds at any step, and 10 and 11 once the group is settled."""
        self._check_protocol(world)
        self._check_consumer_ownership(world)
        self._check_epochs(world)  # before replay: an epoch that went back is the sharper diagnosis
        self._check_replay(world)
        self._check_offsets(world)
        if self.quiescent(world):
            self.quiescent_checks += 1
            self._check_consumer_coverage(world)

    def _check_consumer_ownership(self, world: World) -> None:
        group = world.coordinator.consumer_group(GROUP_ID)
        owners: dict[Key, str] = {}
        for member in consumers(world):
            fenced = group is None or not group.has_member(member.member_id)
            if member.paused or (fenced and (member.zombie or member.stalled)):
                continue
            identity = member.instance_id or member.name
            for key in sorted(member.owned):
                other = owners.setdefault(key, identity)
                if other != identity:
                    raise InvariantViolation("7", f"{key} is owned by {other} and {member.name} at the same time: "
                                                  f"{world.describe()}")

    def _check_epochs(self, world: World) -> None:
        group = world.coordinator.consumer_group(GROUP_ID)
        if group is None:
            return
        if group.group_epoch < self.group_epoch or group.target_assignment_epoch < self.target_epoch:
            raise InvariantViolation("9", f"the group went from epoch {self.group_epoch} (target "
                                          f"{self.target_epoch}) to {group.group_epoch} (target "
                                          f"{group.target_assignment_epoch}): {world.describe()}")
        self.group_epoch, self.target_epoch = group.group_epoch, group.target_assignment_epoch
        if group.target_assignment_epoch > group.group_epoch:
            raise InvariantViolation("9", f"target epoch {group.target_assignment_epoch} is ahead of the group "
                                          f"epoch {group.group_epoch}")
        epochs: dict[str, int] = {}
        for member_id, member in group.members.items():
            epoch = member.member_epoch
            if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                continue
            if epoch > group.target_assignment_epoch:
                raise InvariantViolation("9", f"member {member_id} is at epoch {epoch}, ahead of the target's "
                                              f"{group.target_assignment_epoch}")
            if epoch < self.member_epochs.get(member_id, 0):
                raise InvariantViolation("9", f"member {member_id} went from epoch {self.member_epochs[member_id]} "
                                              f"to {epoch}: {world.describe()}")
            epochs[member_id] = epoch
        self.member_epochs = epochs

    # --- invariants 10 and 11 ----------------------------------------------------------------------------------
    def quiescent(self, world: World) -> bool:
        """The group is settled (see invariant 11 in the module docstring)."""
        running = consumers(world)
        if not running or any(m.paused for m in running):
            return False
        group = world.coordinator.consumer_group(GROUP_ID)
        if group is None or group.state is not ConsumerGroupState.STABLE:
            return False
        if set(group.members) != {m.member_id for m in running}:
            return False
        return all(self._settled(world, group, m) for m in running)

    def _settled(self, world: World, group: ConsumerGroup, member: SimConsumer) -> bool:
        known = group.member(member.member_id)
        return (known is not None and member.settled and member.epoch == group.target_assignment_epoch
                and set(member.owned) == named(world, known.assigned_partitions))

    def _check_consumer_coverage(self, world: World) -> None:
        owners: dict[Key, list[str]] = defaultdict(list)
        running = consumers(world)
        for member in running:
            for topic, partition in sorted(member.owned):
                if topic not in member.topics:
                    raise InvariantViolation("10", f"{member.name} owns {topic}-{partition} without subscribing: "
                                                   f"{world.describe()}")
                owners[topic, partition].append(member.name)
        for topic in sorted({t for m in running for t in m.topics}):
            for partition in range(world.counts.get(topic, 0)):
                holders = owners.get((topic, partition), [])
                if len(holders) != 1:
                    raise InvariantViolation("11", f"settled, yet {topic}-{partition} is owned by {holders}: "
                                                   f"{world.describe()}")
