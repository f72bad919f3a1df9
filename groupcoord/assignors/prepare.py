"""Frames every assignor starts from: ordered members, subscriptions, assignable partitions and valid owned claims.

Member order follows Java's ``MemberInfo``: static members (with a ``group_instance_id``) first, by instance id, then
dynamic members by member id. ``rank`` is that order, 0-based, within the group.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.assignors.lineage import cut
from groupcoord.assignors.schema import GROUP, Inputs

PARTITION_ORDER: tuple[str, ...] = ("topic", "partition")


def member_order() -> list[Column]:
    """Java's ``MemberInfo`` order as sort columns: static first by instance id, then by member id (total)."""
    return [F.col("group_instance_id").isNull(), F.col("group_instance_id"), F.col("member_id")]


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
        return cut(
            self.owned_input.where(F.col("member_id").isNotNull() & F.col("topic").isNotNull())
            .where(F.coalesce(F.col("generation"), F.lit(-1)) == F.col("_top"))
            .select(GROUP, "member_id", "topic", "partition")
            .distinct()
        )

    @cached_property
    def owned(self) -> DataFrame:
        """The valid claims: unique, by a member that still subscribes, of a partition still assignable."""
        return cut(
            self.claims.withColumn(
                "_claimants", F.count(F.lit(1)).over(Window.partitionBy(GROUP, "topic", "partition"))
            )
            .where(F.col("_claimants") == 1)
            .join(self.subscriptions.select(GROUP, "topic", "member_id"), [GROUP, "topic", "member_id"], "left_semi")
            .join(self.partitions.select(GROUP, "topic", "partition"), [GROUP, "topic", "partition"], "left_semi")
            .select(GROUP, "member_id", "topic", "partition")
        )


def prepare(inputs: Inputs) -> Prepared:
    """Derive the shared frames; nothing is evaluated."""
    members = cut(
        inputs.members.withColumn(
            "rank", F.row_number().over(Window.partitionBy(GROUP).orderBy(*member_order())) - 1
        ).select(GROUP, "member_id", "group_instance_id", "rack", "topics", "rank")
    )
    given = cut(inputs.partitions)
    topics = given.select(GROUP, "topic").distinct()
    subscriptions = cut(
        members.select(GROUP, "member_id", "rack", "rank", F.explode(F.array_distinct("topics")).alias("topic"))
        .join(topics, [GROUP, "topic"])
        .withColumn("sub_index", F.row_number().over(Window.partitionBy(GROUP, "topic").orderBy("rank")) - 1)
        .withColumn("n_subs", F.count(F.lit(1)).over(Window.partitionBy(GROUP, "topic")))
    )
    topic_subs = subscriptions.where(F.col("sub_index") == 0).select(GROUP, "topic", "n_subs")
    partitions = cut(given.join(topic_subs, [GROUP, "topic"]))

    return Prepared(
        members.drop("topics"), subscriptions, partitions, inputs.owned, inputs.batched,
        has_owned=inputs.has_owned, has_racks=inputs.has_racks,
    )
