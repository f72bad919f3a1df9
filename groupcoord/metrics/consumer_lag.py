"""Consumer lag with kafka_exporter's metric and label names, for the live endpoint and the checkpoint job's textfile.

Both build their samples here, so a dashboard or an alert written for one reads the other unchanged:

- ``kafka_consumergroup_current_offset`` and ``kafka_consumergroup_lag`` per (consumergroup, topic, partition);
- ``kafka_consumergroup_lag_sum`` per (consumergroup, topic): the lag summed over the topic's partitions;
- ``kafka_consumergroup_members`` per consumergroup;
- ``groupcoord_consumergroup_status`` per consumergroup (0 OK, 1 WARN, 2 ERR), only where a Burrow status is known
  (the checkpoint job judges it over its runs; the live endpoint does not).

A partition's lag is ``log_end - offset``, at least 0 (:func:`partition_lag`, the rule the checkpoint job's
DataFrame applies too); a partition whose log end is unknown (a topic of an external Kafka) has an offset and no lag.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from prometheus_client.core import GaugeMetricFamily

CURRENT_OFFSET = "kafka_consumergroup_current_offset"
LAG = "kafka_consumergroup_lag"
LAG_SUM = "kafka_consumergroup_lag_sum"
MEMBERS = "kafka_consumergroup_members"
STATUS = "groupcoord_consumergroup_status"

_HELP = {
    CURRENT_OFFSET: "Committed offset of a consumer group in a topic partition.",
    LAG: "Records between a consumer group's committed offset and the log end of a partition.",
    LAG_SUM: "Lag of a consumer group summed over the partitions of a topic.",
    MEMBERS: "Members of a consumer group in its latest generation.",
    STATUS: "Burrow status of a consumer group: 0 OK, 1 WARN, 2 ERR.",
}

_PARTITION_LABELS = ["consumergroup", "topic", "partition"]


class PartitionOffset(Protocol):
    """One committed partition of a group: its offset and its lag (``None`` when unknown)."""

    @property
    def topic(self) -> str:
        """The topic."""

    @property
    def partition(self) -> int:
        """The partition."""

    @property
    def offset(self) -> int | None:
        """The committed offset."""

    @property
    def lag(self) -> int | None:
        """Records between the committed offset and the log end; ``None`` when the log end is unknown."""


class GroupOffsets(Protocol):
    """A consumer group with its member count and committed partitions (the checkpoint job's ``GroupReport`` is
    one)."""

    @property
    def group_id(self) -> str:
        """The group id."""

    @property
    def members(self) -> int:
        """Members in the group's latest generation."""

    @property
    def partitions(self) -> Sequence[PartitionOffset]:
        """The group's committed partitions."""


def partition_lag(offset: int, log_end: int | None) -> int | None:
    """``log_end - offset``, at least 0; ``None`` when the log end is unknown."""
    return None if log_end is None else max(log_end - offset, 0)


def consumer_group_families(groups: Iterable[GroupOffsets],
                            statuses: Mapping[str, int] | None = None) -> list[GaugeMetricFamily]:
    """The kafka_exporter families of ``groups``; ``statuses`` (group id to 0, 1 or 2) adds the status family."""
    from prometheus_client.core import GaugeMetricFamily  # here: partition_lag's users need no Prometheus client

    families = {name: GaugeMetricFamily(name, text, labels=_labels(name)) for name, text in _HELP.items()}
    for group in groups:
        lag_sums: dict[str, int] = defaultdict(int)
        for p in group.partitions:
            labels = [group.group_id, p.topic, str(p.partition)]
            if p.offset is not None:
                families[CURRENT_OFFSET].add_metric(labels, p.offset)
            if p.lag is not None:
                families[LAG].add_metric(labels, p.lag)
                lag_sums[p.topic] += p.lag
        for topic, total in sorted(lag_sums.items()):
            families[LAG_SUM].add_metric([group.group_id, topic], total)
        families[MEMBERS].add_metric([group.group_id], group.members)
        if statuses is not None and group.group_id in statuses:
            families[STATUS].add_metric([group.group_id], statuses[group.group_id])
    if statuses is None:
        del families[STATUS]
    return list(families.values())


def _labels(name: str) -> list[str]:
    if name in (CURRENT_OFFSET, LAG):
        return _PARTITION_LABELS
    if name == LAG_SUM:
        return ["consumergroup", "topic"]
    return ["consumergroup"]
