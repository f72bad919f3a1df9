"""Frames every assignor starts from: ordered members, subscriptions, assignable partitions and valid owned claims.

Member order follows Java's ``MemberInfo``: static members (with a ``group_instance_id``) first, by instance id, then
dynamic members by member id. ``rank`` is that order, 0-based, within the group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from pyspark.sql import DataFrame, SparkSession

from groupcoord.assignors.schema import Inputs, none_owned
from groupcoord.plans.lineage import cut
from groupcoord.plans.sql import query

PARTITION_ORDER: tuple[str, ...] = ("topic", "partition")


_MEMBER_ORDER_SQL = "group_instance_id IS NULL, group_instance_id, member_id"
"""Java's ``MemberInfo`` order: static first by instance id, then by member id (total)."""


_SUBSCRIPTIONS_SQL = (
    "SELECT *, row_number() OVER (PARTITION BY _g, topic ORDER BY rank) - 1 AS sub_index, "
    "count(1) OVER (PARTITION BY _g, topic) AS n_subs FROM ("
    "SELECT _g, topic, member_id, rack, rank FROM ("
    "SELECT _g, member_id, rack, rank, explode(array_distinct(topics)) AS topic FROM {ranked}) "
    "JOIN (SELECT DISTINCT _g, topic FROM {given}) USING (_g, topic))"
)
"""One row per member and subscribed topic that exists, numbered in member order per topic."""

_SUBSCRIBED_PARTITIONS_SQL = (
    "SELECT * FROM {given} JOIN (SELECT _g, topic, n_subs FROM {subscriptions} WHERE sub_index = 0) USING (_g, topic)"
)

_HOMOGENEOUS_PARTITIONS_SQL = (
    "SELECT * FROM ({given}) JOIN (SELECT _g, explode(array_distinct(topics)) AS topic, n AS n_subs FROM ("
    "SELECT _g, min_by(topics, rank) AS topics, count(1) AS n FROM {ranked} GROUP BY _g)) USING (_g, topic)"
)
"""Partitions of a group whose members all declare the same topics: the topics are any one member's, and every
member subscribes to each of them (no row per member and topic)."""


_CLAIMS_SQL = (
    "SELECT DISTINCT _g, member_id, topic, partition FROM ("
    "SELECT *, max(_generation) OVER (PARTITION BY _g, topic, partition) AS _top FROM ("
    "SELECT c._g, c.member_id, c.topic, c.partition, coalesce(c.generation, -1) AS _generation FROM {owned} c "
    "JOIN {members} m ON c._g = m._g AND c.member_id = m.member_id WHERE c.topic IS NOT NULL)) "
    "WHERE _generation = _top"
)
"""Kafka's claim resolution (``AbstractStickyAssignor``): per partition, the claims of the highest generation among
its claimants; a claim by someone who is not a member is no claim (see :mod:`groupcoord.assignors.algorithms.group`,
which defines it in Python). An inner join, not a semi join, with the members (one row each): Spark pushes a semi
join below the single-task plan's coalesce of the owned input, which costs an exchange."""


@dataclass(frozen=True)
class Prepared:
    """Lazy frames derived from :class:`Inputs`, shared by the assignors.

    - ``members``: ``_g, member_id, group_instance_id, rack, rank`` (every member, ``rank`` 0-based).
    - ``subscriptions``: ``_g, topic, member_id, rank, rack, sub_index, n_subs``: one row per member and subscribed
      topic that exists; ``sub_index`` is the member's position among the topic's subscribers in member order.
    - ``partitions``: ``_g, topic, partition, racks, weight, n_subs`` for topics with at least one subscriber.
    - ``owned``: ``_g, member_id, topic, partition``: the claims that count and are their partition's only one, by
      a member that still subscribes, of a partition that is still assignable.
    - ``claims``: the claims that count (per partition, its members' claims of its highest claimed generation),
      ties included (cooperative revocation needs them).

    Every frame is derived (and cut) on first use, inside the caller's ``planning`` block: an assignor pays the
    planning and the stage of the frames it reads only (a call the driver assigns reads none of them).

    ``homogeneous`` says the caller proved that each group's members declare the same topic set: ``partitions``
    then takes the topics of one member per group instead of reading ``subscriptions`` (a row per member and
    topic: 2 million rows for 2,000 members of 1,000 topics), and ``owned`` checks membership instead of
    subscription. ``has_owned`` / ``has_racks`` are False when the plan proves there are no claims / no same-rack
    pairs to find (:mod:`groupcoord.plans.facts`): assignors then leave those branches out of the plan.
    """

    members_source: tuple[str, DataFrame]
    """The members input as a SQL text over ``{frame}`` and that frame (see ``Inputs.members``)."""
    given_source: tuple[str, DataFrame]
    """The partitions input as a SQL text over ``{frame}`` and that frame (see ``Inputs.partitions``)."""
    owned_input: DataFrame | None
    """The normalised owned input; None when the caller gave none."""
    batched: bool
    has_owned: bool = True
    has_racks: bool = True
    homogeneous: bool = False
    unchecked: Mapping[str, tuple[str, DataFrame]] = field(default_factory=dict)
    """``Inputs.unchecked``: the inputs in canonical columns, values unchecked."""

    @property
    def session(self) -> SparkSession:
        """The call's SparkSession."""
        return self.members_source[1].sparkSession

    @cached_property
    def ranked(self) -> DataFrame:
        """``_g, member_id, group_instance_id, rack, topics, rank``."""
        text, frame = self.members_source
        return cut(query(
            "SELECT _g, member_id, group_instance_id, rack, topics, row_number() OVER ("
            f"PARTITION BY _g ORDER BY {_MEMBER_ORDER_SQL}) - 1 AS rank FROM ({text})",
            frame=frame,
        ))

    @cached_property
    def given(self) -> DataFrame:
        """The normalised partitions input."""
        text, frame = self.given_source
        return cut(query(text, frame=frame))

    @cached_property
    def members(self) -> DataFrame:
        """Every member with its rank; see the class docstring."""
        return self.ranked.drop("topics")

    @cached_property
    def subscriptions(self) -> DataFrame:
        """One row per member and subscribed topic that exists; see the class docstring."""
        return cut(query(_SUBSCRIPTIONS_SQL, ranked=self.ranked, given=self.given))

    @cached_property
    def partitions(self) -> DataFrame:
        """The assignable partitions with their topic's subscriber count; see the class docstring."""
        if self.homogeneous:
            # The normalised partitions are read once here: their SQL text is nested, not cut on its own.
            text, frame = self.given_source
            return cut(query(_HOMOGENEOUS_PARTITIONS_SQL.replace("{given}", text), frame=frame, ranked=self.ranked))
        return cut(query(_SUBSCRIBED_PARTITIONS_SQL, given=self.given, subscriptions=self.subscriptions))

    @cached_property
    def claims(self) -> DataFrame:
        """The claims that count, one row per member and partition: per partition, those of its claimants (members
        of the group) in the highest generation any of them claims it in (several rows for a tie)."""
        owned = self.owned_input if self.owned_input is not None else none_owned(self.ranked.sparkSession)
        return cut(query(_CLAIMS_SQL, owned=owned, members=self.members))

    @cached_property
    def owned(self) -> DataFrame:
        """The valid claims: unique, by a member that still subscribes, of a partition still assignable."""
        # Under ``homogeneous`` every member subscribes to every topic of ``partitions``: membership is enough.
        subscribed = (
            "LEFT SEMI JOIN {members} s ON c._g = s._g AND c.member_id = s.member_id " if self.homogeneous else
            "LEFT SEMI JOIN {members} s ON c._g = s._g AND c.topic = s.topic AND c.member_id = s.member_id "
        )
        return cut(query(
            "SELECT c._g, c.member_id, c.topic, c.partition FROM ("
            "SELECT * FROM (SELECT *, count(1) OVER (PARTITION BY _g, topic, partition) AS _claimants FROM {claims}) "
            "WHERE _claimants = 1) c "
            + subscribed
            + "LEFT SEMI JOIN {partitions} p ON c._g = p._g AND c.topic = p.topic AND c.partition = p.partition",
            claims=self.claims, partitions=self.partitions,
            members=self.members if self.homogeneous else self.subscriptions,
        ))


def prepare(inputs: Inputs, *, homogeneous: bool = False) -> Prepared:
    """Derive the shared frames lazily (each is one SQL text: :mod:`groupcoord.plans.sql`), each planned and
    cut on first use.

    ``homogeneous``: the caller proved every group's members declare the same topic set (see :class:`Prepared`).
    """
    return Prepared(
        inputs.members, inputs.partitions, inputs.owned, inputs.batched,
        has_owned=inputs.has_owned, has_racks=inputs.has_racks, homogeneous=homogeneous, unchecked=inputs.unchecked,
    )
