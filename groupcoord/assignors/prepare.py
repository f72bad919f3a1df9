"""Frames every assignor starts from: ordered members, subscriptions, assignable partitions and valid owned claims.

Member order follows Java's ``MemberInfo``: static members (with a ``group_instance_id``) first, by instance id, then
dynamic members by member id. ``rank`` is that order, 0-based, within the group.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from pyspark.sql import DataFrame

from groupcoord.assignors.lineage import cut
from groupcoord.assignors.schema import Inputs
from groupcoord.assignors.sql import query

PARTITION_ORDER: tuple[str, ...] = ("topic", "partition")


_MEMBER_ORDER_SQL = "group_instance_id IS NULL, group_instance_id, member_id"
"""Java's ``MemberInfo`` order: static first by instance id, then by member id (total)."""


@dataclass(frozen=True)
class Prepared:
    """Lazy frames derived from :class:`Inputs`, shared by the assignors.

    - ``members``: ``_g, member_id, group_instance_id, rack, rank`` (every member, ``rank`` 0-based).
    - ``subscriptions``: ``_g, topic, member_id, rank, rack, sub_index, n_subs``: one row per member and subscribed
      topic that exists; ``sub_index`` is the member's position among the topic's subscribers in member order.
    - ``partitions``: ``_g, topic, partition, racks, weight, n_subs`` for topics with at least one subscriber.
    - ``owned``: ``_g, member_id, topic, partition``: highest-generation claims that are unique, by a member that
      still subscribes, of a partition that is still assignable.
    - ``claims``: every highest-generation claim, conflicting ones included (cooperative revocation needs them).

    ``owned`` and ``claims`` are derived (and cut) on first use, inside the caller's ``planning`` block: range and
    roundrobin never read them, so they pay neither their planning nor their stage.

    ``has_owned`` / ``has_racks`` are False when the plan proves there are no claims / no same-rack pairs to find
    (:mod:`groupcoord.assignors.plan_facts`): assignors then leave those branches out of the plan.
    """

    members: DataFrame
    subscriptions: DataFrame
    partitions: DataFrame
    owned_input: DataFrame
    batched: bool
    has_owned: bool = True
    has_racks: bool = True

    @cached_property
    def claims(self) -> DataFrame:
        """Every claim of the group's highest generation, one row per member and partition."""
        return cut(query(
            "SELECT DISTINCT _g, member_id, topic, partition FROM {owned} "
            "WHERE member_id IS NOT NULL AND topic IS NOT NULL AND coalesce(generation, -1) = _top",
            owned=self.owned_input,
        ))

    @cached_property
    def owned(self) -> DataFrame:
        """The valid claims: unique, by a member that still subscribes, of a partition still assignable."""
        return cut(query(
            "SELECT c._g, c.member_id, c.topic, c.partition FROM ("
            "SELECT * FROM (SELECT *, count(1) OVER (PARTITION BY _g, topic, partition) AS _claimants FROM {claims}) "
            "WHERE _claimants = 1) c "
            "LEFT SEMI JOIN {subscriptions} s ON c._g = s._g AND c.topic = s.topic AND c.member_id = s.member_id "
            "LEFT SEMI JOIN {partitions} p ON c._g = p._g AND c.topic = p.topic AND c.partition = p.partition",
            claims=self.claims, subscriptions=self.subscriptions, partitions=self.partitions,
        ))


def prepare(inputs: Inputs) -> Prepared:
    """Derive the shared frames; nothing is evaluated. Each is one SQL text (:mod:`groupcoord.assignors.sql`)."""
    members = cut(query(
        "SELECT _g, member_id, group_instance_id, rack, topics, row_number() OVER ("
        f"PARTITION BY _g ORDER BY {_MEMBER_ORDER_SQL}) - 1 AS rank FROM {{members}}",
        members=inputs.members,
    ))
    given = cut(inputs.partitions)
    subscriptions = cut(query(
        "SELECT *, row_number() OVER (PARTITION BY _g, topic ORDER BY rank) - 1 AS sub_index, "
        "count(1) OVER (PARTITION BY _g, topic) AS n_subs FROM ("
        "SELECT _g, topic, member_id, rack, rank FROM ("
        "SELECT _g, member_id, rack, rank, explode(array_distinct(topics)) AS topic FROM {members}) "
        "JOIN (SELECT DISTINCT _g, topic FROM {given}) USING (_g, topic))",
        members=members, given=given,
    ))
    partitions = cut(query(
        "SELECT * FROM {given} JOIN (SELECT _g, topic, n_subs FROM {subscriptions} WHERE sub_index = 0) "
        "USING (_g, topic)",
        given=given, subscriptions=subscriptions,
    ))
    return Prepared(
        members.drop("topics"), subscriptions, partitions, inputs.owned, inputs.batched,
        has_owned=inputs.has_owned, has_racks=inputs.has_racks,
    )
