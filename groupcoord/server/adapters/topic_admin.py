"""The topic admin APIs Kafka's tools use first: CreateTopics, CreatePartitions, DescribeConfigs and DeleteTopics, on
the embedded topic catalog.

``kafka-topics --create / --alter --partitions / --describe`` (and any admin client) work against ``serve`` as
against a one-broker Kafka: a replication factor other than 1 (or -1, the default) is INVALID_REPLICATION_FACTOR
with Kafka's message, a replica assignment naming another broker than 0 INVALID_REPLICA_ASSIGNMENT, and a topic
config that groupcoord does not keep at the asked value INVALID_CONFIG. ``--delete`` is refused as a broker with
``delete.topic.enable=false`` refuses it.
groupcoord has no per-topic configuration: :data:`TOPIC_CONFIGS` lists what holds for every topic, under Kafka's
names, which DescribeConfigs shows (read-only) and CreateTopics v5+ returns. Catalog writes are conditional Delta
commits (off the event loop); the coordinator's metadata refresh picks the change up.

The bodies are the schema codec's dicts (:mod:`groupcoord.server.schema_apis`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.server.api import RequestContext
from groupcoord.topics.catalog import TopicInfo, check_partition_count
from groupcoord.topics.names import validate_topic_name

DEFAULT_PARTITIONS = 1
"""Partitions of a topic created with NumPartitions -1 (Kafka's ``num.partitions`` default)."""
BROKER_ID = 0
"""The one broker this endpoint describes (see :mod:`groupcoord.server.adapters.metadata`)."""
TOPIC_RESOURCE = 2
"""DescribeConfigs' resource type of a topic."""
DEFAULT_CONFIG_SOURCE = 5
"""``ConfigSource`` of a value that is the default (Kafka's ``DEFAULT_CONFIG``)."""
STRING_TYPE, LONG_TYPE, INT_TYPE = 2, 5, 3
"""``ConfigType`` codes of DescribeConfigs v3+."""


@dataclass(frozen=True)
class TopicConfig:
    """A topic config that holds for every topic of groupcoord, by Kafka's name."""

    name: str
    value: str
    config_type: int
    documentation: str


TOPIC_CONFIGS: tuple[TopicConfig, ...] = (
    TopicConfig("cleanup.policy", "delete", STRING_TYPE,
                "Records are never compacted by key (groupcoord's topic logs keep every record)."),
    TopicConfig("retention.ms", "-1", LONG_TYPE, "Records are kept until the topic is deleted."),
    TopicConfig("retention.bytes", "-1", LONG_TYPE, "No size limit."),
    TopicConfig("min.insync.replicas", "1", INT_TYPE, "One replica: the topic log in the state root."),
    TopicConfig("message.timestamp.type", "CreateTime", STRING_TYPE, "Records keep the producer's timestamps."),
)
"""What DescribeConfigs shows for every topic (read-only, defaults)."""
_BY_NAME = {config.name: config for config in TOPIC_CONFIGS}


class TopicCatalogWriter(Protocol):
    """The catalog calls the adapters make (:class:`~groupcoord.topics.catalog.TopicCatalog` has them)."""

    def create(self, name: str, partitions: int) -> TopicInfo:
        """Add a topic; a TopicError when refused."""

    def alter(self, name: str, partitions: int) -> TopicInfo:
        """Grow a topic; a TopicError when refused."""

    def describe(self, name: str) -> TopicInfo:
        """One topic; a TopicError when unknown."""


class Refused(Exception):
    """One topic of a request is refused with ``error`` and Kafka's ``message``."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _outcome(call: Any) -> tuple[ErrorCode, str | None, Any]:
    """``call()``'s result, or the error (and message) it was refused with."""
    try:
        return Errors.NONE, None, call()
    except Refused as refused:
        return refused.error, refused.message, None
    except ProtocolError as exc:
        return exc.error, exc.message or None, None


def _check_replicas(replication_factor: int, assignments: Sequence[Mapping[str, Any]] | None) -> None:
    if replication_factor not in (-1, 1):
        raise Refused(Errors.INVALID_REPLICATION_FACTOR, (
            f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
            f"{replication_factor} cannot be reached because only 1 broker(s) are registered or some brokers have all "
            "their log directories cordoned."))
    for entry in assignments or ():
        if list(entry["BrokerIds"]) != [BROKER_ID]:
            raise Refused(Errors.INVALID_REPLICA_ASSIGNMENT,
                          f"Replica assignment {list(entry['BrokerIds'])} names brokers other than {BROKER_ID}, "
                          "the only one.")


def _check_configs(configs: Sequence[Mapping[str, Any]]) -> None:
    for entry in configs:
        known = _BY_NAME.get(entry["Name"])
        if known is None or entry["Value"] != known.value:
            allowed = ", ".join(f"{c.name}={c.value}" for c in TOPIC_CONFIGS)
            raise Refused(Errors.INVALID_CONFIG,
                          f"groupcoord has no per-topic configuration: {entry['Name']}={entry['Value']} is not "
                          f"supported (every topic has {allowed}).")


def _created_configs() -> list[dict[str, Any]]:
    return [{"Name": c.name, "Value": c.value, "ReadOnly": True, "ConfigSource": DEFAULT_CONFIG_SOURCE,
             "IsSensitive": False} for c in TOPIC_CONFIGS]


class CreateTopicsAdapter:
    """CreateTopics v2-v7: each topic created in the catalog (or only checked, ``validateOnly``)."""

    def __init__(self, catalog: TopicCatalogWriter) -> None:
        self._catalog = catalog

    async def handle(self, ctx: RequestContext) -> Any:
        """Create each topic; one topic's refusal does not fail the others."""
        topics = ctx.body["Topics"]
        repeated = {name for name, n in Counter(t["Name"] for t in topics).items() if n > 1}
        results = []
        for topic in topics:
            if topic["Name"] in repeated:
                results.append(self._result(ctx, topic["Name"], Errors.INVALID_REQUEST,
                                            "Duplicate topic name.", None))
                continue
            error, message, info = await asyncio.to_thread(
                _outcome, lambda t=topic: self._create(t, validate_only=ctx.body["validateOnly"]))
            results.append(self._result(ctx, topic["Name"], error, message, info))
        return ctx.response(ThrottleTimeMs=0, Topics=results)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every topic."""
        return ctx.response(ThrottleTimeMs=0, Topics=[
            self._result(ctx, t["Name"], error, None, None) for t in ctx.body["Topics"]])

    def _create(self, topic: Mapping[str, Any], *, validate_only: bool) -> TopicInfo | int:
        assignments = topic["Assignments"]
        if assignments and topic["NumPartitions"] != -1:
            raise Refused(Errors.INVALID_REQUEST,
                          "Both numPartitions or replicationFactor and replicasAssignments were set.")
        _check_replicas(topic["ReplicationFactor"], assignments)
        _check_configs(topic["Configs"])
        partitions = len(assignments) if assignments else topic["NumPartitions"]
        partitions = DEFAULT_PARTITIONS if partitions == -1 else partitions
        if validate_only:
            validate_topic_name(topic["Name"])
            check_partition_count(partitions)
            try:
                self._catalog.describe(topic["Name"])
            except ProtocolError:
                return partitions
            raise Refused(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic['Name']}' already exists.")
        return self._catalog.create(topic["Name"], partitions)

    @staticmethod
    def _result(ctx: RequestContext, name: str, error: ErrorCode, message: str | None,
                created: TopicInfo | int | None) -> dict[str, Any]:
        result: dict[str, Any] = {"Name": name, "ErrorCode": error.code, "ErrorMessage": message}
        if ctx.api_version >= 5 and created is not None:
            partitions = created if isinstance(created, int) else created.partitions
            result.update(NumPartitions=partitions, ReplicationFactor=1, Configs=_created_configs())
        if ctx.api_version >= 7 and isinstance(created, TopicInfo):
            result["TopicId"] = uuid.UUID(created.topic_id)
        return result


class CreatePartitionsAdapter:
    """CreatePartitions v0-v3: each topic grown to its new count (or only checked, ``ValidateOnly``)."""

    def __init__(self, catalog: TopicCatalogWriter) -> None:
        self._catalog = catalog

    async def handle(self, ctx: RequestContext) -> Any:
        """Grow each topic; one topic's refusal does not fail the others."""
        results = []
        for topic in ctx.body["Topics"]:
            error, message, _ = await asyncio.to_thread(
                _outcome, lambda t=topic: self._grow(t, validate_only=ctx.body["ValidateOnly"]))
            results.append({"Name": topic["Name"], "ErrorCode": error.code, "ErrorMessage": message})
        return ctx.response(ThrottleTimeMs=0, Results=results)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every topic."""
        return ctx.response(ThrottleTimeMs=0, Results=[
            {"Name": t["Name"], "ErrorCode": error.code, "ErrorMessage": None} for t in ctx.body["Topics"]])

    def _grow(self, topic: Mapping[str, Any], *, validate_only: bool) -> None:
        _check_replicas(1, topic["Assignments"])
        if validate_only:
            current = self._catalog.describe(topic["Name"])
            if topic["Count"] <= current.partitions:
                raise Refused(Errors.INVALID_PARTITIONS, (
                    f"Topic currently has {current.partitions} partitions, which is higher than the requested "
                    f"{topic['Count']}." if topic["Count"] < current.partitions
                    else f"Topic already has {current.partitions} partitions."))
            return
        self._catalog.alter(topic["Name"], topic["Count"])


class DeleteTopicsAdapter:
    """DeleteTopics v1-v6, answered as a Kafka broker with ``delete.topic.enable=false`` answers it: groupcoord keeps
    topics for good (its appenders, readers, sinks and idempotent-producer state assume a topic never goes away).
    Every topic of the request gets TOPIC_DELETION_DISABLED (v3+), or INVALID_REQUEST below v3, as in Kafka."""

    async def handle(self, ctx: RequestContext) -> Any:
        """Refuse every topic."""
        if ctx.api_version < 3:
            return self.error_response(ctx, Errors.INVALID_REQUEST)
        return self.error_response(ctx, Errors.TOPIC_DELETION_DISABLED)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every topic."""
        message = "Topic deletion is disabled." if error in (Errors.INVALID_REQUEST,
                                                             Errors.TOPIC_DELETION_DISABLED) else None
        if ctx.api_version >= 6:
            requested = [(t["Name"], t["TopicId"]) for t in ctx.body["Topics"]]
        else:
            requested = [(name, None) for name in ctx.body["TopicNames"]]
        results = []
        for name, topic_id in requested:
            result: dict[str, Any] = {"Name": name, "ErrorCode": error.code}
            if ctx.api_version >= 5:
                result["ErrorMessage"] = message
            if ctx.api_version >= 6 and topic_id is not None:
                result["TopicId"] = topic_id
            results.append(result)
        return ctx.response(ThrottleTimeMs=0, Responses=results)


class DescribeConfigsAdapter:
    """DescribeConfigs v1-v4 of topics: :data:`TOPIC_CONFIGS` (or those asked for by name), read-only defaults."""

    def __init__(self, catalog: TopicCatalogWriter) -> None:
        self._catalog = catalog

    async def handle(self, ctx: RequestContext) -> Any:
        """Each resource's configs, or its error."""
        results = []
        for resource in ctx.body["Resources"]:
            error, message, configs = await asyncio.to_thread(_outcome, lambda r=resource: self._configs(ctx, r))
            results.append({"ErrorCode": error.code, "ErrorMessage": message,
                            "ResourceType": resource["ResourceType"], "ResourceName": resource["ResourceName"],
                            "Configs": configs or []})
        return ctx.response(ThrottleTimeMs=0, Results=results)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every resource."""
        return ctx.response(ThrottleTimeMs=0, Results=[
            {"ErrorCode": error.code, "ErrorMessage": None, "ResourceType": r["ResourceType"],
             "ResourceName": r["ResourceName"], "Configs": []} for r in ctx.body["Resources"]])

    def _configs(self, ctx: RequestContext, resource: Mapping[str, Any]) -> list[dict[str, Any]]:
        if resource["ResourceType"] != TOPIC_RESOURCE:
            raise Refused(Errors.INVALID_REQUEST,
                          f"groupcoord describes the configs of topics only, not of resource type "
                          f"{resource['ResourceType']}.")
        self._catalog.describe(resource["ResourceName"])  # unknown: UNKNOWN_TOPIC_OR_PARTITION
        keys = resource["ConfigurationKeys"]
        chosen = [c for c in TOPIC_CONFIGS if keys is None or c.name in keys]
        documented = ctx.api_version >= 3 and ctx.body["IncludeDocumentation"]
        return [self._entry(c, ctx.api_version, documented) for c in chosen]

    @staticmethod
    def _entry(config: TopicConfig, api_version: int, documented: bool) -> dict[str, Any]:
        entry: dict[str, Any] = {"Name": config.name, "Value": config.value, "ReadOnly": True,
                                 "ConfigSource": DEFAULT_CONFIG_SOURCE, "IsSensitive": False, "Synonyms": []}
        if api_version >= 3:
            entry["ConfigType"] = config.config_type
            entry["Documentation"] = config.documentation if documented else None
        return entry
