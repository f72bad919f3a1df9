"""The authorization layer: every request checked against the ACLs before (and around) its adapter, as KafkaApis does.

With the listener's ``authorizer.enabled`` (``ctx.authorizer``), each API's rule (:data:`RULES`, Kafka's table:
docs/security.md) asks the :class:`~groupcoord.security.authorizer.Authorizer`:

- a request on one group or on the cluster that is denied gets the adapter's own error response with
  GROUP_AUTHORIZATION_FAILED (30), CLUSTER_AUTHORIZATION_FAILED (31) or TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53);
- a request naming several topics or groups is split: the adapter answers the allowed entries, its error response
  answers the denied ones with TOPIC_AUTHORIZATION_FAILED (29) or GROUP_AUTHORIZATION_FAILED, and the two lists are
  merged (allowed first, as Kafka merges them), so the adapters stay unaware of ACLs;
- a request for everything (Metadata and DescribeTopicPartitions of all topics, ListGroups, OffsetFetch of all of a
  group's topics) has from the response what the principal may not Describe removed.

Listeners without the authorizer pass every request straight through (one attribute test).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.security.acl_store import AclStore
from groupcoord.security.acls import CLUSTER_NAME, Operation, ResourceType
from groupcoord.security.authorizer import Authorizer
from groupcoord.server.api import ApiHandler, Dispatcher, RequestContext
from groupcoord.server.schema_apis import SchemaResponse
from groupcoord.server.topics import TopicSource
from groupcoord.server.versions import ApiKey

log = logging.getLogger("groupcoord.server.authorization")

_TOPIC, _GROUP, _CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
_TOPIC_DENIED, _GROUP_DENIED = Errors.TOPIC_AUTHORIZATION_FAILED, Errors.GROUP_AUTHORIZATION_FAILED
_CLUSTER_DENIED = Errors.CLUSTER_AUTHORIZATION_FAILED
_BROKER_RESOURCES = frozenset({4, 8})  # DescribeConfigs' BROKER and BROKER_LOGGER
_TOPIC_RESOURCE = 2
_GROUP_KEY, _TRANSACTION_KEY = 0, 1


class Access:
    """What one request's principal may do: the authorizer's answers for this principal and host."""

    def __init__(self, authorizer: Authorizer, ctx: RequestContext, topics: TopicSource) -> None:
        self._authorizer = authorizer
        self._principal = ctx.principal
        self._host = ctx.client_host.lstrip("/")
        self._topics = topics
        self._names: dict[uuid.UUID, str] | None = None

    def may(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        """Whether ``operation`` on the resource is allowed."""
        return self._authorizer.allowed(self._principal, self._host, operation, resource_type, name)

    def may_on_cluster(self, operation: Operation) -> bool:
        """Whether ``operation`` on the cluster is allowed."""
        return self.may(operation, _CLUSTER, CLUSTER_NAME)

    def may_on_any(self, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether ``operation`` is allowed on some resource of ``resource_type``."""
        return self._authorizer.allowed_on_any(self._principal, self._host, operation, resource_type)

    def topic_name(self, name: str | None, topic_id: Any) -> str | None:
        """The topic an entry names (by name, or by id: ``None`` for an id no topic has, which the adapter answers
        with UNKNOWN_TOPIC_ID)."""
        if name:
            return name
        if not isinstance(topic_id, uuid.UUID) or topic_id.int == 0:
            return name
        if self._names is None:
            self._names = {topic: name for name, topic in self._topics.topic_ids().items()}
        return self._names.get(topic_id)

    def may_topic(self, operation: Operation, name: str | None) -> bool:
        """Whether ``operation`` on topic ``name`` is allowed (an unresolved topic passes to its adapter)."""
        return name is None or self.may(operation, _TOPIC, name)


Rule = Callable[[Access, RequestContext, ApiHandler], Awaitable[Any]]
"""How one API is authorized: answers the request, through the adapter for whatever is allowed."""


# --- reading and rebuilding requests and responses of both kinds (kafka-python objects, schema dicts) -----------------
def field_of(obj: Any, name: str) -> Any:
    """Field ``name`` of a request body or a response, whichever kind it is."""
    if type(obj) is dict:  # the usual case first: a schema-served request's body or entry
        return obj.get(name)
    if isinstance(obj, SchemaResponse):
        return obj.body.get(name)
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def with_field(obj: Any, name: str, value: Any) -> Any:
    """A copy of ``obj`` with field ``name`` set to ``value``."""
    if isinstance(obj, SchemaResponse):
        return dataclasses.replace(obj, body={**obj.body, name: value})
    if isinstance(obj, Mapping):
        return {**obj, name: value}
    changed = copy.copy(obj)
    setattr(changed, name, value)
    return changed


def _with_body(ctx: RequestContext, body: Any) -> RequestContext:
    return dataclasses.replace(ctx, request=dataclasses.replace(ctx.request, body=body))


def _entry_name(entry: Any, name_field: str, access: Access) -> str | None:
    if isinstance(entry, str):
        return entry
    name = field_of(entry, name_field)
    if name:
        return str(name)
    return access.topic_name(name, field_of(entry, "TopicId" if name_field[0].isupper() else "topic_id"))


async def split(ctx: RequestContext, inner: ApiHandler, field: str, out_field: str,
                error_of: Callable[[Any], ErrorCode | None]) -> Any:
    """Answer the entries of request list ``field`` that ``error_of`` passes (``None``) through ``inner``, the others
    with ``inner``'s error response for their error, merged into response list ``out_field``."""
    entries = list(field_of(ctx.body, field) or ())
    errors = [error_of(entry) for entry in entries]
    if not any(error is not None for error in errors):
        return await inner.handle(ctx)
    allowed = [entry for entry, error in zip(entries, errors, strict=True) if error is None]
    if allowed:
        response = await inner.handle(_with_body(ctx, with_field(ctx.body, field, allowed)))
    else:
        response = inner.error_response(_with_body(ctx, with_field(ctx.body, field, [])), Errors.NONE)
    if response is None:  # Produce with acks=0
        return None
    merged = list(field_of(response, out_field) or ())
    for denied in dict.fromkeys(error for error in errors if error is not None):
        part = [entry for entry, error in zip(entries, errors, strict=True) if error is denied]
        answer = inner.error_response(_with_body(ctx, with_field(ctx.body, field, part)), denied)
        merged.extend(field_of(answer, out_field) or ())
    return with_field(response, out_field, merged)


def hide(response: Any, field: str, keep: Callable[[Any], bool]) -> Any:
    """``response`` without the entries of list ``field`` that ``keep`` refuses."""
    entries = field_of(response, field)
    if entries is None:
        return response
    kept = [entry for entry in entries if keep(entry)]
    return response if len(kept) == len(entries) else with_field(response, field, kept)


# --- rules ------------------------------------------------------------------------------------------------------------
def one_group(operation: Operation, field: str) -> Rule:
    """A request on the one group in body field ``field``: GROUP_AUTHORIZATION_FAILED unless ``operation``."""
    async def rule(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
        if access.may(operation, _GROUP, field_of(ctx.body, field) or ""):
            return await inner.handle(ctx)
        return inner.error_response(ctx, _GROUP_DENIED)
    return rule


def on_cluster(operation: Operation) -> Rule:
    """A request on the cluster: CLUSTER_AUTHORIZATION_FAILED unless ``operation``."""
    async def rule(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
        if access.may_on_cluster(operation):
            return await inner.handle(ctx)
        return inner.error_response(ctx, _CLUSTER_DENIED)
    return rule


def each_topic(operation: Operation, field: str, out_field: str, name_field: str) -> Rule:
    """A request on several topics: TOPIC_AUTHORIZATION_FAILED for each not allowed ``operation``."""
    async def rule(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
        return await split(ctx, inner, field, out_field, lambda entry: None if access.may_topic(
            operation, _entry_name(entry, name_field, access)) else _TOPIC_DENIED)
    return rule


def each_group(operation: Operation, field: str, out_field: str, name_field: str = "") -> Rule:
    """A request on several groups: GROUP_AUTHORIZATION_FAILED for each not allowed ``operation``."""
    async def rule(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
        return await split(ctx, inner, field, out_field, lambda entry: None if access.may(
            operation, _GROUP, entry if isinstance(entry, str) else field_of(entry, name_field)) else _GROUP_DENIED)
    return rule


def group_then_topics(group_operation: Operation, group_field: str, topic_operation: Operation) -> Rule:
    """OffsetCommit and OffsetDelete: the group first (all of the request fails without it), then each topic."""
    topics_field = "Topics" if group_field[0].isupper() else "topics"
    topic_rule = each_topic(topic_operation, topics_field, topics_field, "Name" if group_field[0].isupper() else "name")

    async def rule(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
        if not access.may(group_operation, _GROUP, field_of(ctx.body, group_field) or ""):
            return inner.error_response(ctx, _GROUP_DENIED)
        return await topic_rule(access, ctx, inner)
    return rule


async def metadata(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """Metadata: named topics need Describe; a request for all topics lists only those the principal may Describe."""
    topics = field_of(ctx.body, "topics")
    if topics is None or (ctx.api_version == 0 and not topics):
        return hide(await inner.handle(ctx), "topics", lambda t: access.may_topic(Operation.DESCRIBE, t.name))
    return await each_topic(Operation.DESCRIBE, "topics", "topics", "name")(access, ctx, inner)


async def describe_topic_partitions(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """DescribeTopicPartitions: as Metadata (an empty list asks for every topic)."""
    if not field_of(ctx.body, "Topics"):
        return hide(await inner.handle(ctx), "Topics", lambda t: access.may_topic(Operation.DESCRIBE, t["Name"]))
    return await each_topic(Operation.DESCRIBE, "Topics", "Topics", "Name")(access, ctx, inner)


async def list_groups(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """ListGroups: every group with CLUSTER Describe, else those the principal may Describe."""
    response = await inner.handle(ctx)
    if access.may_on_cluster(Operation.DESCRIBE):
        return response
    return hide(response, "groups", lambda g: access.may(Operation.DESCRIBE, _GROUP, g.group_id))


def _denied_partition(partition: Mapping[str, Any]) -> dict[str, Any]:
    return {**partition, "CommittedOffset": -1, "CommittedLeaderEpoch": -1, "Metadata": "",
            "ErrorCode": _TOPIC_DENIED.code}


def _fetched_topics(access: Access, topics: Iterable[Any], requested_all: bool) -> list[Any]:
    """One group's OffsetFetch topics: those the principal may not Describe dropped (all topics asked) or their
    partitions answered TOPIC_AUTHORIZATION_FAILED (topics named)."""
    answered = []
    for topic in topics:
        if access.may_topic(Operation.DESCRIBE, _entry_name(topic, "Name", access)):
            answered.append(topic)
        elif not requested_all:
            answered.append({**topic, "Partitions": [_denied_partition(p) for p in topic["Partitions"]]})
    return answered


async def offset_fetch(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """OffsetFetch: GROUP Describe for each group, then TOPIC Describe for each of its topics."""
    if ctx.api_version < 8:
        if not access.may(Operation.DESCRIBE, _GROUP, ctx.body["GroupId"]):  # no topics, as Kafka answers
            return with_field(inner.error_response(ctx, _GROUP_DENIED), "Topics", [])
        response = await inner.handle(ctx)
        return with_field(response, "Topics", _fetched_topics(access, field_of(response, "Topics") or (),
                                                              ctx.body.get("Topics") is None))
    asked_all = {group["GroupId"]: group.get("Topics") is None for group in ctx.body["Groups"]}
    response = await each_group(Operation.DESCRIBE, "Groups", "Groups", "GroupId")(access, ctx, inner)
    return with_field(response, "Groups", [
        {**group, "Topics": _fetched_topics(access, group.get("Topics") or (), asked_all.get(group["GroupId"], True))}
        if group.get("ErrorCode", 0) != _GROUP_DENIED.code else group
        for group in field_of(response, "Groups") or ()])


async def find_coordinator(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """FindCoordinator: GROUP Describe of a group key, TRANSACTIONAL_ID Describe of a transaction key."""
    kind = ResourceType.TRANSACTIONAL_ID if field_of(ctx.body, "key_type") == _TRANSACTION_KEY else _GROUP
    denied = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if kind == ResourceType.TRANSACTIONAL_ID else _GROUP_DENIED
    if ctx.api_version < 4:
        if access.may(Operation.DESCRIBE, kind, field_of(ctx.body, "key") or ""):
            return await inner.handle(ctx)
        return inner.error_response(ctx, denied)
    return await split(ctx, inner, "coordinator_keys", "coordinators",
                       lambda key: None if access.may(Operation.DESCRIBE, kind, key) else denied)


async def consumer_group_heartbeat(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """ConsumerGroupHeartbeat: GROUP Read, then TOPIC Describe of every subscribed topic (Kafka 4.x)."""
    if not access.may(Operation.READ, _GROUP, ctx.body["GroupId"]):
        return inner.error_response(ctx, _GROUP_DENIED)
    names = ctx.body.get("SubscribedTopicNames") or ()
    if any(not access.may(Operation.DESCRIBE, _TOPIC, name) for name in names):
        return with_field(inner.error_response(ctx, _TOPIC_DENIED), "ErrorMessage",
                          "The group has subscribed to topics that are not authorized.")
    return await inner.handle(ctx)


async def create_topics(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """CreateTopics: CLUSTER Create allows every topic; else TOPIC Create for each."""
    if access.may_on_cluster(Operation.CREATE):
        return await inner.handle(ctx)
    return await each_topic(Operation.CREATE, "Topics", "Topics", "Name")(access, ctx, inner)


async def delete_topics(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """DeleteTopics: TOPIC Delete for each (by name before v6, as entries from v6)."""
    field = "Topics" if ctx.api_version >= 6 else "TopicNames"
    return await each_topic(Operation.DELETE, field, "Responses", "Name")(access, ctx, inner)


async def describe_configs(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """DescribeConfigs: TOPIC DescribeConfigs per topic, CLUSTER DescribeConfigs per broker resource."""
    def error_of(resource: Mapping[str, Any]) -> ErrorCode | None:
        if resource["ResourceType"] in _BROKER_RESOURCES:
            return None if access.may_on_cluster(Operation.DESCRIBE_CONFIGS) else _CLUSTER_DENIED
        if resource["ResourceType"] == _TOPIC_RESOURCE:
            return None if access.may_topic(Operation.DESCRIBE_CONFIGS, resource["ResourceName"]) else _TOPIC_DENIED
        return None
    return await split(ctx, inner, "Resources", "Results", error_of)


async def init_producer_id(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """InitProducerId: TRANSACTIONAL_ID Write for a transactional producer; else CLUSTER IdempotentWrite or Write on
    some topic."""
    transactional_id = field_of(ctx.body, "transactional_id")
    if transactional_id is not None:
        if access.may(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return await inner.handle(ctx)
        return inner.error_response(ctx, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if access.may_on_cluster(Operation.IDEMPOTENT_WRITE) or access.may_on_any(Operation.WRITE, _TOPIC):
        return await inner.handle(ctx)
    return inner.error_response(ctx, _CLUSTER_DENIED)


async def unchecked(access: Access, ctx: RequestContext, inner: ApiHandler) -> Any:
    """ApiVersions and the SASL requests: not authorized (they come before or without a principal)."""
    return await inner.handle(ctx)


RULES: Mapping[ApiKey, Rule] = {
    ApiKey.PRODUCE: each_topic(Operation.WRITE, "topic_data", "responses", "name"),
    ApiKey.FETCH: each_topic(Operation.READ, "Topics", "Responses", "Topic"),
    ApiKey.LIST_OFFSETS: each_topic(Operation.DESCRIBE, "topics", "topics", "name"),
    ApiKey.METADATA: metadata,
    ApiKey.OFFSET_COMMIT: group_then_topics(Operation.READ, "GroupId", Operation.READ),
    ApiKey.OFFSET_FETCH: offset_fetch,
    ApiKey.FIND_COORDINATOR: find_coordinator,
    ApiKey.JOIN_GROUP: one_group(Operation.READ, "group_id"),
    ApiKey.HEARTBEAT: one_group(Operation.READ, "group_id"),
    ApiKey.LEAVE_GROUP: one_group(Operation.READ, "group_id"),
    ApiKey.SYNC_GROUP: one_group(Operation.READ, "group_id"),
    ApiKey.DESCRIBE_GROUPS: each_group(Operation.DESCRIBE, "groups", "groups"),
    ApiKey.LIST_GROUPS: list_groups,
    ApiKey.SASL_HANDSHAKE: unchecked,
    ApiKey.API_VERSIONS: unchecked,
    ApiKey.CREATE_TOPICS: create_topics,
    ApiKey.DELETE_TOPICS: delete_topics,
    ApiKey.INIT_PRODUCER_ID: init_producer_id,
    ApiKey.DESCRIBE_ACLS: on_cluster(Operation.DESCRIBE),
    ApiKey.CREATE_ACLS: on_cluster(Operation.ALTER),
    ApiKey.DELETE_ACLS: on_cluster(Operation.ALTER),
    ApiKey.DESCRIBE_CONFIGS: describe_configs,
    ApiKey.SASL_AUTHENTICATE: unchecked,
    ApiKey.CREATE_PARTITIONS: each_topic(Operation.ALTER, "Topics", "Results", "Name"),
    ApiKey.DELETE_GROUPS: each_group(Operation.DELETE, "GroupsNames", "Results"),
    ApiKey.OFFSET_DELETE: group_then_topics(Operation.DELETE, "group_id", Operation.READ),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: on_cluster(Operation.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: on_cluster(Operation.ALTER),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: each_group(Operation.DESCRIBE, "GroupIds", "Groups"),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: describe_topic_partitions,
}
"""Each API's rule, as KafkaApis authorizes it (docs/security.md has the table)."""


class AuthorizedHandler:
    """``inner`` behind its API's rule, when the request's listener has the authorizer on."""

    def __init__(self, inner: ApiHandler, rule: Rule, acls: AclStore, topics: TopicSource) -> None:
        self._inner = inner
        self._rule = rule
        self._acls = acls
        self._topics = topics

    async def handle(self, ctx: RequestContext) -> Any:
        """The inner adapter's answer for what the principal may do, Kafka's errors for the rest."""
        config = ctx.authorizer
        if not config.enabled:
            return await self._inner.handle(ctx)
        return await self._rule(Access(Authorizer(self._acls, config), ctx, self._topics), ctx, self._inner)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """The inner adapter's."""
        return self._inner.error_response(ctx, error)


def authorized(dispatcher: Dispatcher, acls: AclStore, topics: TopicSource) -> dict[ApiKey, ApiHandler]:
    """``dispatcher`` with every handler behind its rule (an API without one is refused with
    CLUSTER_AUTHORIZATION_FAILED unless the principal may Alter the cluster)."""
    fallback = on_cluster(Operation.ALTER)
    return {key: AuthorizedHandler(handler, RULES.get(key, fallback), acls, topics)
            for key, handler in dispatcher.items()}
