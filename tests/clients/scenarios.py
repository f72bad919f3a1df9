"""The consumer-group scenarios every client runs, written once against a small client-neutral interface.

Each client (kafka-python, aiokafka, confluent-kafka, kafkajs, Kafka's Java consumer and admin client) provides a
:class:`Client`: it starts :class:`Member` consumers of :data:`TOPIC` in a group and offers its admin API. A scenario
then reads as what a user of any client does, and asserts what any of them observes against Kafka's coordinator:

- :func:`join_split_and_hand_over`: one member owns every partition, a second one splits them, the first leaves
  and hands its partitions over;
- :func:`static_restarts_and_fencing`: static members (KIP-345) restart, follower then leader, and get their own
  partitions back without a rebalance; a second live consumer with a member's instance id fences the first;
- :func:`commits_and_admin`: commits read back by the member, then the admin API lists, describes, reads the offsets,
  resets them to the earliest, the latest and a given offset, and deletes the group (where the admin API can).

``GROUPCOORD_CLIENTS_ORACLE=kafka`` runs the same scenarios against a Kafka 4.4.0 broker (tests/clients/conftest.py),
which is how the expectations here were checked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

TOPIC = "clients-orders"
PARTITIONS = 4
RECORDS_PER_PARTITION = 5
"""The topic every scenario consumes: 4 partitions of 5 records each (offsets 0-4, log end 5)."""
ALL = frozenset(range(PARTITIONS))
TIMEOUT_S = 45.0
SETTLE_S = 1.5
"""How long a scenario watches for a rebalance that must not happen: three heartbeat intervals of the members."""
HEARTBEAT_MS = 500
SESSION_MS = 10_000


@dataclass(frozen=True)
class DescribedMember:
    """One member as an admin client describes it."""

    client_id: str
    instance_id: str | None
    partitions: frozenset[int]


@dataclass(frozen=True)
class Description:
    """A group as an admin client describes it (``state`` as Kafka names it: ``Stable``, ``Empty``...)."""

    state: str
    members: tuple[DescribedMember, ...]


class Member(Protocol):
    """One consumer of :data:`TOPIC` in a group, polled in the background by its client."""

    def assignment(self) -> frozenset[int]:
        """The partitions it owns now."""

    def assignments(self) -> int:
        """How many assignments it received so far (each completed rebalance it took part in adds one)."""

    def commit(self, offsets: Mapping[int, int]) -> str | None:
        """Commit ``offsets`` by partition synchronously; ``None``, or the client's name of the error."""

    def committed(self, partitions: Iterable[int]) -> dict[int, int | None]:
        """The group's committed offset of each partition (``None`` where there is none)."""

    def hold(self) -> None:
        """Stop polling (calls made on the member still run); it returns once no poll is under way. Work a client does
        on threads of its own, such as heartbeats, goes on."""

    def close(self) -> None:
        """Close the consumer (a dynamic member leaves the group; a static one does not, as Kafka's clients do)."""


STATIC = "static membership"
DESCRIBE = "describe"
DELETE = "delete"
CAPABILITIES = (STATIC, DESCRIBE, DELETE)
"""What a client may lack (every client tested joins, commits, lists, reads and resets offsets): static members
(``group.instance.id``), describing a group with its members, deleting a group. A client names what it lacks in
:attr:`Client.lacks`; tests/clients/test_consumer_groups.py checks that it really lacks it and that
docs/compatibility.md says so."""


class Client(Protocol):
    """One Kafka client library: its consumers and its admin API."""

    lacks: Mapping[str, str]
    """The :data:`CAPABILITIES` the client does not offer, each with the reason (the docs' table repeats them)."""
    fenced_error: str
    """A regular expression (case-insensitive) matching what the client's error says when a fenced static member
    commits: its name of FENCED_INSTANCE_ID, or of UNKNOWN_MEMBER_ID for a client whose OffsetCommit carries no
    instance id, the same against Kafka. A client that resets its generation when a heartbeat meets
    FENCED_INSTANCE_ID refuses a later commit itself, with an error of its own: which of the two the commit meets
    depends on whether the member's next heartbeat or the commit comes first, so the expression names both."""

    def join(self, group: str, name: str, *, instance_id: str | None = None) -> Member:
        """A new consumer named ``name`` (its client id) subscribing to :data:`TOPIC` in ``group``."""

    def list_groups(self) -> dict[str, str | None]:
        """Every group by id, with its state (``None`` where the client cannot tell it)."""

    def describe(self, group: str) -> Description:
        """``group``'s state and members."""

    def group_offsets(self, group: str) -> dict[int, int]:
        """``group``'s committed offsets of :data:`TOPIC` by partition."""

    def reset(self, group: str, to: str | int) -> None:
        """Set ``group``'s offsets of every partition of :data:`TOPIC` to ``"earliest"``, ``"latest"`` or an offset."""

    def delete(self, group: str) -> str | None:
        """Delete ``group``: ``None``, or the client's name of the error."""

    def close(self) -> None:
        """Release the admin client and every member still open."""


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = TIMEOUT_S) -> None:
    """Poll ``condition`` every 50 ms until it holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.05)


def owns_everything(member: Member) -> bool:
    """``member`` owns every partition of :data:`TOPIC`."""
    return member.assignment() == ALL


def split_evenly(*members: Member) -> bool:
    """The members own disjoint, equally large shares that together cover :data:`TOPIC`."""
    shares = [member.assignment() for member in members]
    return (sum(len(s) for s in shares) == PARTITIONS and frozenset().union(*shares) == ALL
            and max(len(s) for s in shares) - min(len(s) for s in shares) <= 1)


def join_split_and_hand_over(client: Client, group: str) -> None:
    """a owns everything; b joins and they split; a leaves and b takes everything over; b leaves: Empty."""
    a = client.join(group, "a")
    wait_for(lambda: owns_everything(a), "a to own every partition")
    b = client.join(group, "b")
    wait_for(lambda: split_evenly(a, b), "a and b to split the partitions")
    a.close()
    wait_for(lambda: owns_everything(b), "b to take over a's partitions")
    b.close()
    wait_for(lambda: client.list_groups().get(group, "") in ("Empty", None), "the group to be Empty once both left")


def static_restarts_and_fencing(client: Client, group: str) -> None:
    """Static members a (the leader: it joined first) and b. Each restarts (closes without leaving, a new consumer
    with the same instance id) and gets its partitions back while the other sees no rebalance; the group stays
    Stable with both instances. Then a second live consumer with a's instance id takes a's place and the first one's
    commit is fenced (by the coordinator, or by the client itself when a heartbeat told it first: see
    :attr:`Client.fenced_error`)."""
    ids = {name: f"{group}-{name}" for name in ("a", "b")}
    members = {"a": client.join(group, "a", instance_id=ids["a"])}
    wait_for(lambda: owns_everything(members["a"]), "a to own every partition")
    members["b"] = client.join(group, "b", instance_id=ids["b"])
    wait_for(lambda: split_evenly(*members.values()), "a and b to split the partitions")
    time.sleep(SETTLE_S)  # a client may report an assignment before its rebalance callback has run
    shares = {name: member.assignment() for name, member in members.items()}
    for name, other in (("b", "a"), ("a", "b")):  # a follower restarts, then the leader
        seen = members[other].assignments()
        members[name].close()
        members[name] = client.join(group, name, instance_id=ids[name])
        wait_for(owns(members[name], shares[name]), f"restarted {name} to get its partitions back")
        time.sleep(SETTLE_S)
        assert members[other].assignments() == seen, f"the restart of {name} made {other} rebalance"
        assert {n: m.assignment() for n, m in members.items()} == shares
    if DESCRIBE not in client.lacks:
        described = client.describe(group)
        assert described.state == "Stable"
        assert {(m.instance_id, m.partitions) for m in described.members} == {(ids[n], shares[n]) for n in shares}
    # The first a polls no more, so what it does next is the commit. A client that heartbeats from its poll loop
    # (aiokafka: its Heartbeat carries no instance id) would otherwise meet UNKNOWN_MEMBER_ID on its next heartbeat,
    # rejoin with the instance id and take a's place back, and its commit would succeed.
    members["a"].hold()
    usurper = client.join(group, "a", instance_id=ids["a"])
    wait_for(owns(usurper, shares["a"]), "the second a to take a's place")
    error = members["a"].commit({min(shares["a"]): 1})
    assert error is not None and re.search(client.fenced_error, error, re.IGNORECASE), error
    for member in (usurper, members["b"]):
        member.close()


def owns(member: Member, share: frozenset[int]) -> Callable[[], bool]:
    """A condition: ``member`` owns exactly ``share``."""
    return lambda: member.assignment() == share


def commits_and_admin(client: Client, group: str) -> None:
    """a commits and reads its commits back; the admin API lists and describes the group, refuses to delete it while
    a is in it; once a left: the offsets, resets to the earliest, the latest and a given offset, and the delete."""
    a = client.join(group, "a")
    wait_for(lambda: owns_everything(a), "a to own every partition")
    error = a.commit({0: 2, 1: 3})
    assert error is None, error
    assert a.committed(sorted(ALL)) == {0: 2, 1: 3, 2: None, 3: None}
    assert client.list_groups().get(group, "") in ("Stable", None)
    if DESCRIBE not in client.lacks:
        described = client.describe(group)
        assert described.state == "Stable" and [m.partitions for m in described.members] == [ALL]
    if DELETE not in client.lacks:
        assert client.delete(group) is not None, "a group with a member was deleted"
    a.close()
    wait_for(lambda: client.list_groups().get(group, "") in ("Empty", None), "the group to be Empty once a left")
    assert client.group_offsets(group) == {0: 2, 1: 3}
    expected: Mapping[str | int, dict[int, int]] = {
        "earliest": dict.fromkeys(ALL, 0), "latest": dict.fromkeys(ALL, RECORDS_PER_PARTITION),
        3: dict.fromkeys(ALL, 3)}
    for to, offsets in expected.items():
        client.reset(group, to)
        assert client.group_offsets(group) == offsets, f"after the reset to {to}"
    if DELETE not in client.lacks:
        assert client.delete(group) is None
        assert group not in client.list_groups()
        assert client.group_offsets(group) == {}


SCENARIOS: dict[str, Callable[[Client, str], None]] = {
    "join-split-hand-over": join_split_and_hand_over,
    "static-restarts-fencing": static_restarts_and_fencing,
    "commits-admin": commits_and_admin,
}
"""Every scenario by name (each client runs each one, a static one only where the client offers static members)."""
NEEDS = {"static-restarts-fencing": STATIC}
"""The capability a scenario cannot run without."""
