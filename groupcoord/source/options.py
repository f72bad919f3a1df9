"""The ``groupcoord`` source's options: Spark's Kafka source options, classified, plus the ``spark.groupcoord.*`` keys.

Every option is one of:

- a Spark Kafka source option this source supports (:data:`KAFKA_SOURCE_OPTIONS`), or accepts with a warning
  (:data:`WARNED_OPTIONS`), or rejects with a reason (:data:`REJECTED_OPTIONS`);
- ``kafka.<Kafka client setting>``, passed to the Kafka client (librdkafka) with ``kafka.bootstrap.servers``; the
  Java client's security settings (``kafka.sasl.jaas.config``, PEM key and trust stores) are mapped to librdkafka's
  (:mod:`groupcoord.security.kafka_client`);
- a ``spark.groupcoord.*`` registry key without its prefix (``group.id``, ``state.root``, ``assignors``,
  ``member.*``), a member timing of this source (:data:`MEMBER_TIMING_OPTIONS`), or :data:`MIRROR_OPTION`.

Option names are case-insensitive, as Spark's are. The session's ``spark.groupcoord.*`` conf (captured by
``register``) gives the registry keys' defaults. Anything else, or a contradictory pair, raises
:class:`SourceOptionError` naming it, when the query is defined (``load()``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groupcoord.config import PREFIX, REGISTRY, ConfigError, resolve_config
from groupcoord.member.config import DEFAULT_ASSIGNORS, MemberOptions
from groupcoord.security.kafka_client import KafkaClientSettingsError, librdkafka_settings
from groupcoord.state_root import StateRoot

log = logging.getLogger("groupcoord.source.options")


class SourceOptionError(ValueError):
    """A bad option of the ``groupcoord`` source; the message names it."""


KAFKA_SOURCE_OPTIONS = ("subscribe", "subscribePattern", "startingOffsets", "maxOffsetsPerTrigger", "minPartitions",
                        "maxRecordsPerPartition", "includeHeaders", "failOnDataLoss", "kafkaConsumer.pollTimeoutMs",
                        "kafka.bootstrap.servers")
"""Spark Kafka source options with the same meaning here (``startingOffsets`` for partitions without a committed
offset)."""

WARNED_OPTIONS = {
    "fetchOffset.numRetries": "offsets are read from the topic log or by librdkafka, which retries on its own",
    "fetchOffset.retryIntervalMs": "offsets are read from the topic log or by librdkafka, which retries on its own",
    "kafkaConsumer.pollTimeoutMs.legacy": "no legacy Kafka consumer here",
}
"""Accepted and ignored, with a warning saying why."""

REJECTED_OPTIONS = {
    "assign": "a consumer group assigns the partitions: use subscribe or subscribePattern",
    "kafka.group.id": "the query's group is group.id, kept by the state root's coordinator, not a group on the "
                      "source cluster",
    "groupIdPrefix": "the query joins the consumer group named by group.id",
    "startingOffsetsByTimestamp": "not supported: the embedded topic log has no time index; use startingOffsets, "
                                  "or reset the group's offsets (groupcoord groups reset-offsets --to-datetime)",
    "startingTimestamp": "not supported: the embedded topic log has no time index; use startingOffsets, or reset "
                         "the group's offsets (groupcoord groups reset-offsets --to-datetime)",
    "startingOffsetsByTimestampStrategy": "not supported, as startingOffsetsByTimestamp",
    "endingOffsets": "a batch query option; this source is streaming only",
    "endingOffsetsByTimestamp": "a batch query option; this source is streaming only",
    "endingTimestamp": "a batch query option; this source is streaming only",
    "minOffsetsPerTrigger": "not supported: a Python data source cannot combine a minimum and a maximum read limit "
                            "(pyspark 4.2)",
    "maxTriggerDelay": "not supported: it only applies with minOffsetsPerTrigger",
    "kafka.auto.offset.reset": "use startingOffsets (as Spark's Kafka source says)",
    "kafka.enable.auto.commit": "offsets are committed to the group by the source and the sink, never by the client",
    "kafka.key.deserializer": "keys are always read as bytes (as Spark's Kafka source does)",
    "kafka.value.deserializer": "values are always read as bytes (as Spark's Kafka source does)",
    "kafka.interceptor.classes": "Java-only: records are read with librdkafka, which has no interceptors",
}
"""Refused at start, with the reason."""

JAVA_ONLY_KAFKA_SETTINGS: dict[str, str] = {}
"""``kafka.*`` settings of Java's client that librdkafka, which reads the records here, does not have. None today:
the security settings (``kafka.sasl.jaas.config``, PEM key and trust stores) are mapped to librdkafka's
(:mod:`groupcoord.security.kafka_client`), and what cannot be mapped (JKS stores) is refused there, with the reason."""

MIRROR_OPTION = "mirrorCommitsToKafka"
"""With ``kafka.bootstrap.servers``: also commit the group's offsets to the group of the same name on that cluster."""

MEMBER_TIMING_OPTIONS = {"session.timeout.ms": 45000, "heartbeat.interval.ms": 3000, "rebalance.timeout.ms": 300000}
"""The member's timing (Kafka's consumer settings of the same names; the rebalance timeout is Kafka's
``max.poll.interval.ms`` and must cover a micro-batch, since revoked partitions are released between batches)."""

_GROUPCOORD_KEYS = ("group.id", "state.root", "assignors", *(k.name for k in REGISTRY if k.name.startswith("member.")),
                    *(k.name for k in REGISTRY if k.name.startswith("storage.")))



@dataclass(frozen=True, kw_only=True)
class SourceOptions:
    """The validated options of one ``groupcoord`` source."""

    group_id: str
    state_root: str
    topics: tuple[str, ...] | None
    pattern: str | None
    starting: str | dict[str, dict[int, int]] = "latest"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = 120000
    bootstrap_servers: str | None = None
    kafka_settings: Mapping[str, str] = field(default_factory=dict)
    mirror_commits: bool = False
    assignors: tuple[str, ...] = DEFAULT_ASSIGNORS
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    rebalance_timeout_ms: int = 300000
    member: MemberOptions = field(default_factory=MemberOptions)
    storage: Mapping[str, str] = field(default_factory=dict)
    """The state root's ``storage.*`` settings when it is on S3 (short names; never secret values: the secrets
    come from the environment, or from the files these settings name, in every process that opens the root)."""

    def open_root(self) -> StateRoot:
        """The state root, opened with :attr:`storage` and this process's environment."""
        return StateRoot.open(self.state_root, storage=self.storage)

    def subscribes(self, topic: str) -> bool:
        """True when ``topic`` is subscribed (a pattern must match the whole name, as in Kafka)."""
        if self.topics is not None:
            return topic in self.topics
        assert self.pattern is not None
        return re.fullmatch(self.pattern, topic) is not None


def parse_source_options(options: Mapping[str, str], session_defaults: Mapping[str, str] | None = None, *,
                         warn: bool = True) -> SourceOptions:
    """Validate ``options`` (with the session's ``spark.groupcoord.*`` conf as defaults); raises
    :class:`SourceOptionError` naming the first bad option or contradictory pair. ``warn``: log the ignored options
    (once per query: the source parses them again in its other workers without)."""
    canonical = _canonical_names()
    given: dict[str, str] = {}
    groupcoord: dict[str, str] = {}
    kafka: dict[str, str] = {}
    for raw_name, value in options.items():
        name = canonical.get(raw_name.lower())
        lowered = raw_name.lower()
        if lowered in {k.lower() for k in REJECTED_OPTIONS} or lowered in JAVA_ONLY_KAFKA_SETTINGS:
            reason = {k.lower(): v for k, v in {**REJECTED_OPTIONS, **JAVA_ONLY_KAFKA_SETTINGS}.items()}[lowered]
            raise SourceOptionError(f"groupcoord source: option {raw_name!r} is not accepted: {reason}")
        if name is not None and name in WARNED_OPTIONS:
            if warn:
                log.warning("groupcoord source: option %s is ignored: %s", name, WARNED_OPTIONS[name])
        elif name is not None and name in _GROUPCOORD_KEYS:
            groupcoord[name] = value
        elif name is not None:
            given[name] = value
        elif lowered.startswith("kafka."):
            kafka[raw_name[len("kafka."):]] = value
        elif lowered == "path":
            raise SourceOptionError("groupcoord source: load() takes no path; name the topics with subscribe")
        else:
            raise SourceOptionError(f"groupcoord source: unknown option {raw_name!r} (the options are Spark's Kafka "
                                    f"source options, kafka.*, {', '.join(_GROUPCOORD_KEYS[:3])}, member.* and "
                                    f"{', '.join(MEMBER_TIMING_OPTIONS)}; see docs/streaming.md)")
    return _build(given, groupcoord, kafka, session_defaults or {})


def _canonical_names() -> dict[str, str]:
    names = [*KAFKA_SOURCE_OPTIONS, *WARNED_OPTIONS, *_GROUPCOORD_KEYS, *MEMBER_TIMING_OPTIONS, MIRROR_OPTION]
    return {n.lower(): n for n in names}


def _build(given: dict[str, str], groupcoord: dict[str, str], kafka: dict[str, str],
           session_defaults: Mapping[str, str]) -> SourceOptions:
    try:
        config = resolve_config(spark_conf=session_defaults,
                                conf=[f"{PREFIX}{k}={v}" for k, v in groupcoord.items()])
    except ConfigError as exc:
        raise SourceOptionError(f"groupcoord source: {exc}") from None
    group_id, state_root = config["group.id"], config["state.root"]
    if not group_id:
        raise SourceOptionError("groupcoord source: option 'group.id' is required (or set spark.groupcoord.group.id)")
    if not state_root:
        raise SourceOptionError("groupcoord source: option 'state.root' is required (or register(spark, "
                                "state_root=...), or set spark.groupcoord.state.root)")
    topics, pattern = _subscription(given)
    servers = given.pop("kafka.bootstrap.servers", None)
    timing = {name: _required_int(given, name, default) for name, default in MEMBER_TIMING_OPTIONS.items()}
    if timing["heartbeat.interval.ms"] >= timing["session.timeout.ms"]:
        raise SourceOptionError(f"groupcoord source: heartbeat.interval.ms ({timing['heartbeat.interval.ms']}) must "
                                f"be lower than session.timeout.ms ({timing['session.timeout.ms']})")
    starting = _starting(given.get("startingOffsets", "latest"), topics, pattern)
    mirror = _bool(given, MIRROR_OPTION, False)
    if mirror and servers is None:
        raise SourceOptionError(f"groupcoord source: option '{MIRROR_OPTION}' needs kafka.bootstrap.servers (the "
                                "cluster whose group gets the commits)")
    if kafka and servers is None:
        raise SourceOptionError(f"groupcoord source: option 'kafka.{sorted(kafka)[0]}' needs kafka.bootstrap.servers "
                                "(without it records come from the state root's embedded topic log)")
    return SourceOptions(
        group_id=group_id, state_root=state_root, topics=topics, pattern=pattern, starting=starting,
        max_offsets_per_trigger=_int(given, "maxOffsetsPerTrigger", None, minimum=1),
        min_partitions=_int(given, "minPartitions", None, minimum=1),
        max_records_per_partition=_int(given, "maxRecordsPerPartition", None, minimum=1),
        include_headers=_bool(given, "includeHeaders", False), fail_on_data_loss=_bool(given, "failOnDataLoss", True),
        poll_timeout_ms=_required_int(given, "kafkaConsumer.pollTimeoutMs", 120000),
        bootstrap_servers=servers, kafka_settings=_librdkafka(kafka), mirror_commits=mirror,
        assignors=tuple(a.strip() for a in str(config["assignors"]).split(",") if a.strip()) or DEFAULT_ASSIGNORS,
        session_timeout_ms=timing["session.timeout.ms"], heartbeat_interval_ms=timing["heartbeat.interval.ms"],
        rebalance_timeout_ms=timing["rebalance.timeout.ms"],
        member=MemberOptions.from_config(config),
        storage={name: str(value) for name, value in config.section("storage.").items() if value},
    )


def _librdkafka(kafka: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options (without the prefix) in librdkafka's names."""
    try:
        return librdkafka_settings(kafka)
    except KafkaClientSettingsError as exc:
        raise SourceOptionError(f"groupcoord source: option kafka.{exc}") from None


def _subscription(given: Mapping[str, str]) -> tuple[tuple[str, ...] | None, str | None]:
    subscribe, pattern = given.get("subscribe"), given.get("subscribePattern")
    if (subscribe is None) == (pattern is None):
        raise SourceOptionError("groupcoord source: give exactly one of 'subscribe' and 'subscribePattern'"
                                + (" (both were given)" if subscribe is not None else ""))
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SourceOptionError(f"groupcoord source: subscribePattern {pattern!r} is not a regular expression: "
                                    f"{exc}") from None
        return None, pattern
    assert subscribe is not None
    topics = tuple(t.strip() for t in subscribe.split(",") if t.strip())
    if not topics:
        raise SourceOptionError("groupcoord source: 'subscribe' names no topic")
    return topics, None


def _starting(value: str, topics: tuple[str, ...] | None,
              pattern: str | None) -> str | dict[str, dict[int, int]]:
    """``earliest``, ``latest`` or Spark's JSON (``{"t": {"0": 23, "1": -2}}``; -2 earliest, -1 latest)."""
    if value.strip().lower() in ("earliest", "latest"):
        return value.strip().lower()
    try:
        parsed: Any = json.loads(value)
        by_topic = {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        raise SourceOptionError(f"groupcoord source: startingOffsets must be earliest, latest or JSON like "
                                f"{{\"topic\": {{\"0\": 23}}}}, got {value!r}") from None
    for topic, parts in by_topic.items():
        if (topics is not None and topic not in topics) or (pattern is not None and not re.fullmatch(pattern, topic)):
            raise SourceOptionError(f"groupcoord source: startingOffsets names topic {topic!r}, which the query does "
                                    "not subscribe to")
        if any(o < -2 for o in parts.values()):
            raise SourceOptionError(f"groupcoord source: startingOffsets of {topic!r}: offsets are >= 0, or -2 "
                                    "(earliest) or -1 (latest)")
    return by_topic


def _int(given: Mapping[str, str], name: str, default: int | None, *, minimum: int) -> int | None:
    raw = given.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SourceOptionError(f"groupcoord source: option {name!r} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SourceOptionError(f"groupcoord source: option {name!r} must be at least {minimum}, got {value}")
    return value


def _required_int(given: Mapping[str, str], name: str, default: int) -> int:
    value = _int(given, name, default, minimum=1)
    assert value is not None
    return value


def _bool(given: Mapping[str, str], name: str, default: bool) -> bool:
    raw = given.get(name)
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise SourceOptionError(f"groupcoord source: option {name!r} must be true or false, got {raw!r}")
    return raw.strip().lower() == "true"
