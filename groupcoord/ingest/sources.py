"""Where the ingestion job reads records: the embedded topic log, or a Kafka cluster (``kafka://HOST:PORT,...``).

A :class:`SourceSpec` is a small picklable description built on the driver and shipped to every member task. Both
engines read through the ``groupcoord`` source's own code: the log bounds and partition counts through its
:mod:`~groupcoord.source.log_view` (:meth:`SourceSpec.log_view`), the records through its
:class:`~groupcoord.source.records.RangeReader` (:meth:`SourceSpec.range_read`), librdkafka for Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from groupcoord.config import ConfigError
from groupcoord.member.config import parse_bootstrap
from groupcoord.security.kafka_client import librdkafka_settings, read_client_properties
from groupcoord.source.log_view import LogView, open_log_view
from groupcoord.source.records import RangeRead
from groupcoord.state_root import StateRoot

KAFKA_SCHEME = "kafka://"
EMBEDDED = "embedded"
KAFKA_TIMEOUT_S = 30.0
"""How long a metadata or watermark request to the Kafka cluster may take."""


@dataclass(frozen=True)
class SourceSpec:
    """A parsed ``spark.groupcoord.source``: the embedded log of ``state_root``, or Kafka ``bootstrap`` servers."""

    state_root: str
    bootstrap: tuple[tuple[str, int], ...] | None = None
    storage: Mapping[str, str] = field(default_factory=dict)
    """The state root's ``storage.*`` settings when it is on S3 (never secret values)."""
    kafka_settings: Mapping[str, str] = field(default_factory=dict, repr=False)
    """librdkafka settings of a Kafka source (security included), from ``source.kafka.config.file``."""

    @classmethod
    def parse(cls, source: str, *, state_root: str | StateRoot, kafka_config_file: str | None = None) -> SourceSpec:
        """``embedded`` or ``kafka://HOST:PORT[,HOST:PORT]`` (with the Kafka client settings of
        ``kafka_config_file``, Java names); anything else raises :class:`ConfigError`."""
        root, storage = state_root.location.spec() if isinstance(state_root, StateRoot) else (str(state_root), {})
        if source == EMBEDDED:
            return cls(root, storage=storage)
        if source.startswith(KAFKA_SCHEME):
            try:
                settings = librdkafka_settings(read_client_properties(kafka_config_file)) if kafka_config_file \
                    else {}
                return cls(root, parse_bootstrap(source.removeprefix(KAFKA_SCHEME)), storage=storage,
                           kafka_settings=settings)
            except ValueError as exc:
                raise ConfigError(f"source {source!r}: {exc}") from None
        raise ConfigError(f"source {source!r} is neither '{EMBEDDED}' nor {KAFKA_SCHEME}HOST:PORT[,HOST:PORT]")

    @property
    def is_kafka(self) -> bool:
        """True for a Kafka cluster, False for the embedded topic log."""
        return self.bootstrap is not None

    @property
    def bootstrap_servers(self) -> list[str]:
        """The Kafka bootstrap servers as ``HOST:PORT`` strings (empty for the embedded log)."""
        return [f"{host}:{port}" for host, port in self.bootstrap or ()]

    @property
    def servers(self) -> str | None:
        """The bootstrap servers as librdkafka takes them (``HOST:PORT,...``); ``None`` for the embedded log."""
        return ",".join(self.bootstrap_servers) if self.bootstrap is not None else None

    def log_view(self) -> LogView:
        """The source's log bounds and partition counts (one Kafka client, or the embedded log)."""
        return open_log_view(self.open_root(), self.servers, self.kafka_settings, timeout_s=KAFKA_TIMEOUT_S)

    def open_root(self) -> StateRoot:
        """The state root, opened in this process (credentials from its environment)."""
        return StateRoot.open(self.state_root, storage=self.storage)

    def range_read(self) -> RangeRead:
        """What a :class:`~groupcoord.source.records.RangeReader` of the members engine reads: no headers, and
        offsets that retention removes while a batch is read are skipped with a warning (a position already gone
        when the member plans a batch is reset by ``auto.offset.reset``)."""
        return RangeRead(include_headers=False, fail_on_data_loss=False, state_root=self.state_root,
                         bootstrap_servers=self.servers, kafka_settings=self.kafka_settings, storage=self.storage)

    def describe(self) -> str:
        """The source as the user wrote it."""
        return KAFKA_SCHEME + ",".join(self.bootstrap_servers) if self.bootstrap is not None else EMBEDDED
