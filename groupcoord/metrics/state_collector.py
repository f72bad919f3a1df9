"""The scrape-time collector: the state a host already keeps, read when Prometheus asks, never on a hot path.

Each scrape samples the core once on its event loop (groups, members, committed offsets) and reads the rest from
thread-safe parts of the term: the lease, the record log's version and Delta table, the commit counts of the
record log, the state tables and the topic logs, the materializer's lag and the topic logs' end offsets (for
consumer lag). A part that cannot be read (storage down, a loop that does not answer) is left out of that scrape
and logged; the others are still served.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from groupcoord.group.consumer_group import ConsumerGroupState
from groupcoord.group.state import GroupState
from groupcoord.metrics.consumer_lag import consumer_group_families, partition_lag
from groupcoord.metrics.host_state import GroupSample, HostState, Phase, ServingTerm, committed_offsets, sample_groups
from groupcoord.metrics.record_watch import CLASSIC, CONSUMER
from groupcoord.storage.tables import open_table

log = logging.getLogger("groupcoord.metrics.collector")

_Part = Callable[[ServingTerm | None], Iterator[Metric]]

GROUP_STATES = {
    CLASSIC: [s.value for s in GroupState if s is not GroupState.DEAD],
    CONSUMER: [s.value for s in ConsumerGroupState if s is not ConsumerGroupState.DEAD],
}
"""Every state a live group of each type can be in: each is exposed, 0 included, so a panel always has its series."""


@dataclass(frozen=True)
class _Partition:
    topic: str
    partition: int
    offset: int | None
    lag: int | None


@dataclass(frozen=True)
class _Group:
    group_id: str
    members: int
    partitions: Sequence[_Partition]


class _LogSize:
    """The record log's data files at one version, cached until the version moves."""

    def __init__(self) -> None:
        self.version = -2
        self.bytes = 0
        self.records = 0

    def at(self, term: ServingTerm, version: int) -> _LogSize:
        if version != self.version:
            actions = pa.table(open_table(term.record_log).get_add_actions(flatten=True))
            self.bytes = int(pc.sum(actions.column("size_bytes")).as_py() or 0)
            self.records = int(pc.sum(actions.column("num_records")).as_py() or 0)
            self.version = version
        return self


class StateCollector(Collector):
    """Collects the host's state for ``prometheus_client`` (register it on the host's own registry)."""

    def __init__(self, host: HostState) -> None:
        self._host = host
        self._log_size = _LogSize()

    def collect(self) -> Iterator[Metric]:
        """Every family of the host's state (see the module docs)."""
        phase, term = self._host.current()
        yield _gauge("groupcoord_serving", "1 while this process holds the lease and serves, else 0.",
                     1 if phase is Phase.SERVING else 0)
        yield from self._guarded("the lease", self._lease, term)
        failures = self._host.authentication
        yield CounterMetricFamily("groupcoord_authentication_failures",
                                  "Failed authentications (SASL or TLS) on the coordinator's endpoint.",
                                  value=failures.authentication_failures() if failures is not None else 0)
        if term is None:
            return
        yield from self._guarded("the groups", self._groups, term)
        yield from self._guarded("the record log", self._record_log, term)
        yield from self._guarded("the materializer", self._materializer, term)

    def _guarded(self, what: str, part: _Part, term: ServingTerm | None) -> Iterator[Metric]:
        try:
            families = list(part(term))
        except Exception as exc:  # one unreadable part must not fail the whole scrape
            log.warning("metrics: cannot read %s: %s", what, exc)
            return
        yield from families

    def _lease(self, term: ServingTerm | None) -> Iterator[Metric]:
        lease = self._host.lease_info(term)
        if lease is None:
            return
        yield _gauge("groupcoord_lease_epoch", "Epoch of the coordinator lease (this holder's, or the one it stands "
                     "by behind).", lease.epoch)
        yield _gauge("groupcoord_lease_expiry_timestamp_seconds", "When the coordinator lease expires unless renewed "
                     "(Unix time).", lease.expiry.timestamp())
        holder = GaugeMetricFamily("groupcoord_lease_holder_info", "The coordinator lease's holder and address (1).",
                                   labels=["holder", "address"])
        holder.add_metric([lease.holder, lease.address], 1)
        yield holder

    def _groups(self, term: ServingTerm | None) -> Iterator[Metric]:
        assert term is not None
        samples = term.on_loop(lambda: sample_groups(term.core))
        by_state = Counter((s.type, s.state) for s in samples)
        groups = GaugeMetricFamily("groupcoord_groups", "Groups by type (classic, consumer) and state.",
                                   labels=["type", "state"])
        members = GaugeMetricFamily("groupcoord_members", "Members of all groups, by group type.", labels=["type"])
        for kind, states in GROUP_STATES.items():
            for state in states:
                groups.add_metric([kind, state], by_state[kind, state])
            members.add_metric([kind], sum(s.members for s in samples if s.type == kind))
        yield groups
        yield members
        yield from consumer_group_families(self._lags(term, samples))

    @staticmethod
    def _lags(term: ServingTerm, samples: Sequence[GroupSample]) -> list[_Group]:
        """Each group's committed offsets with their lag against the embedded topics' log ends (none for a topic
        the catalog does not know, such as an external Kafka's)."""
        offsets = {s.group_id: committed_offsets(term.core, s.group_id) for s in samples}
        known = term.topics.partition_counts()
        topics = sorted({t for group in offsets.values() for t, _ in group if t in known})
        ends = {(t, p): bounds.end for t in topics for p, bounds in term.topics.offsets(t).items()}
        return [_Group(s.group_id, s.members, [_Partition(t, p, offset, partition_lag(offset, ends.get((t, p))))
                                               for (t, p), offset in sorted(offsets[s.group_id].items())])
                for s in samples]

    def _record_log(self, term: ServingTerm | None) -> Iterator[Metric]:
        assert term is not None
        version = term.batcher.version
        yield _gauge("groupcoord_record_log_version", "The record log's latest committed Delta version.", version)
        yield _gauge("groupcoord_record_log_last_commit_age_seconds",
                     "Seconds since the record log's last commit by this holder (its takeover included).",
                     self._host.last_log_commit_age_s())
        commits = CounterMetricFamily("groupcoord_delta_commits", "Delta commits of this holder's term, by table "
                                      "(record_log, state: the materialized tables, topics: Produce).",
                                      labels=["table"])
        commits.add_metric(["record_log"], term.batcher.commits)
        commits.add_metric(["state"], term.materializer.commits)
        commits.add_metric(["topics"], term.appender.stats.commits)
        yield commits
        size = self._log_size.at(term, version)
        yield _gauge("groupcoord_record_log_bytes", "Bytes of the record log's live data files (snapshot and tail).",
                     size.bytes)
        yield _gauge("groupcoord_record_log_records", "Records in the record log's live data files: what a new holder "
                     "replays.", size.records)

    @staticmethod
    def _materializer(term: ServingTerm | None) -> Iterator[Metric]:
        assert term is not None
        lag = term.materializer.lag()
        yield _gauge("groupcoord_materializer_lag_seconds", "How long ago the oldest log batch the state tables do "
                     "not show yet was committed (0: caught up).", lag.seconds)
        yield _gauge("groupcoord_materializer_lag_versions", "Record log versions the state tables do not show yet.",
                     max(0, lag.log_version - lag.materialized_version))


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)

