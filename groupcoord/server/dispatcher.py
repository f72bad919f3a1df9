"""Assembling the dispatcher: which adapter answers which API, and the ranges ApiVersions advertises for them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.runtime.service import CoordinatorService
from groupcoord.security.acl_store import AclStore
from groupcoord.security.credentials import Credentials
from groupcoord.server.adapters.acls import CreateAclsMapping, DeleteAclsMapping, DescribeAclsAdapter
from groupcoord.server.adapters.admin import DeleteGroupsMapping, DescribeGroupsMapping, ListGroupsMapping
from groupcoord.server.adapters.api_versions import ApiVersionsAdapter
from groupcoord.server.adapters.consumer_groups import ConsumerGroupDescribeMapping, ConsumerGroupHeartbeatMapping
from groupcoord.server.adapters.core import CoreAdapter, CoreMapping
from groupcoord.server.adapters.describe_topic_partitions import DescribeTopicPartitionsAdapter
from groupcoord.server.adapters.fetch import FetchAdapter
from groupcoord.server.adapters.find_coordinator import FindCoordinatorAdapter
from groupcoord.server.adapters.groups import HeartbeatMapping, JoinGroupMapping, LeaveGroupMapping, SyncGroupMapping
from groupcoord.server.adapters.known_partitions import KnownPartitionsAdapter, KnownTopics
from groupcoord.server.adapters.list_offsets import ListOffsetsAdapter
from groupcoord.server.adapters.metadata import MetadataAdapter
from groupcoord.server.adapters.offset_commit import OffsetCommitMapping
from groupcoord.server.adapters.offset_delete import OffsetDeleteMapping
from groupcoord.server.adapters.offset_fetch import OffsetFetchAdapter
from groupcoord.server.adapters.produce import InitProducerIdAdapter, ProduceAdapter
from groupcoord.server.adapters.topic_admin import (
    CreatePartitionsAdapter,
    CreateTopicsAdapter,
    DeleteTopicsAdapter,
    DescribeConfigsAdapter,
    TopicCatalogWriter,
)
from groupcoord.server.adapters.user_credentials import (
    AlterUserScramCredentialsMapping,
    DescribeUserScramCredentialsAdapter,
)
from groupcoord.server.api import ApiHandler, Dispatcher
from groupcoord.server.authentication import IllegalSaslStateAdapter
from groupcoord.server.authorization import authorized
from groupcoord.server.topic_data import TopicReader, TopicWriter
from groupcoord.server.topics import StaticTopics, TopicSource
from groupcoord.server.versions import SUPPORTED_VERSIONS, ApiKey, VersionRange
from groupcoord.topics.producer_state import ProducerIdAllocator

# The APIs the core answers, and how each maps between the wire and the core's types.
CORE_MAPPINGS: Mapping[ApiKey, Callable[[], CoreMapping]] = {
    ApiKey.JOIN_GROUP: JoinGroupMapping,
    ApiKey.SYNC_GROUP: SyncGroupMapping,
    ApiKey.HEARTBEAT: HeartbeatMapping,
    ApiKey.LEAVE_GROUP: LeaveGroupMapping,
    ApiKey.DESCRIBE_GROUPS: DescribeGroupsMapping,
    ApiKey.LIST_GROUPS: ListGroupsMapping,
    ApiKey.DELETE_GROUPS: DeleteGroupsMapping,
    ApiKey.CONSUMER_GROUP_DESCRIBE: ConsumerGroupDescribeMapping,
}


def _serving() -> ErrorCode:
    return Errors.NONE


def build_dispatcher(
    *,
    topics: TopicSource | None = None,
    service: CoordinatorService | None = None,
    topic_reader: TopicReader | None = None,
    topic_writer: TopicWriter | None = None,
    producer_ids: ProducerIdAllocator | None = None,
    extra: Mapping[ApiKey, ApiHandler] | None = None,
    ranges: Mapping[ApiKey, VersionRange] = SUPPORTED_VERSIONS,
    consumer_groups: bool = False,
    topic_admin: TopicCatalogWriter | None = None,
    credentials: Credentials | None = None,
    acls: AclStore | None = None,
) -> Dispatcher:
    """A dispatcher for ApiVersions, Metadata, DescribeTopicPartitions, FindCoordinator, SaslHandshake and
    SaslAuthenticate (after authentication: :mod:`groupcoord.server.authentication`); every group and offset API
    when a coordinator ``service`` is given; ListOffsets and Fetch when a ``topic_reader`` is given; Produce and
    InitProducerId when a ``topic_writer`` is given (producer ids from ``producer_ids``, by default a term-0
    allocator);
    ConsumerGroupHeartbeat (KIP-848) with a ``service`` whose shell computes target assignments
    (``consumer_groups``); CreateTopics, CreatePartitions, DescribeConfigs and DeleteTopics on a ``topic_admin``
    catalog; DescribeUserScramCredentials and AlterUserScramCredentials with a ``service`` and the core's
    ``credentials``; DescribeAcls, CreateAcls and DeleteAcls with a ``service`` and the ACLs (``acls``, by default
    those of the service's core); plus the adapters in ``extra``.

    With ACLs, every handler sits behind the authorization layer (:mod:`groupcoord.server.authorization`), which
    checks requests on listeners with ``authorizer.enabled`` and passes them through on others.

    With ``topics``, OffsetCommit and OffsetDelete answer UNKNOWN_TOPIC_OR_PARTITION for partitions that do not exist
    there, as a Kafka broker checks its metadata; without, every topic named by name is taken as it comes. Topics
    named by id (OffsetCommit and OffsetFetch v10) are looked up in ``topics`` (none without).

    ApiVersions advertises exactly the APIs the dispatcher serves, at their ``ranges``. FindCoordinator answers
    with the service's availability (COORDINATOR_NOT_AVAILABLE-style errors while it does not serve).
    """
    availability = service.availability if service is not None else _serving
    source = topics if topics is not None else StaticTopics()
    handlers: dict[ApiKey, ApiHandler] = {
        ApiKey.METADATA: MetadataAdapter(source),
        ApiKey.DESCRIBE_TOPIC_PARTITIONS: DescribeTopicPartitionsAdapter(source),
        ApiKey.FIND_COORDINATOR: FindCoordinatorAdapter(availability=availability,
                                                        transactions=topic_writer is not None),
        # Reached only once a connection is authenticated, or on a listener without SASL (SaslGate answers them
        # before): ILLEGAL_SASL_STATE, as Kafka's request handler.
        ApiKey.SASL_HANDSHAKE: IllegalSaslStateAdapter(),
        ApiKey.SASL_AUTHENTICATE: IllegalSaslStateAdapter(),
    }
    if service is not None:
        for key, mapping in CORE_MAPPINGS.items():
            handlers[key] = CoreAdapter(service, mapping())
        known = KnownTopics(source)
        handlers[ApiKey.OFFSET_COMMIT] = KnownPartitionsAdapter(
            service, OffsetCommitMapping(known, screen_names=topics is not None), known)
        handlers[ApiKey.OFFSET_FETCH] = OffsetFetchAdapter(service, known)
        handlers[ApiKey.OFFSET_DELETE] = CoreAdapter(service, OffsetDeleteMapping())
        if consumer_groups:
            handlers[ApiKey.CONSUMER_GROUP_HEARTBEAT] = CoreAdapter(service, ConsumerGroupHeartbeatMapping())
        if topics is not None:
            handlers[ApiKey.OFFSET_DELETE] = KnownPartitionsAdapter(service, OffsetDeleteMapping(known), known)
        if credentials is not None:
            handlers[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS] = DescribeUserScramCredentialsAdapter(credentials)
            handlers[ApiKey.ALTER_USER_SCRAM_CREDENTIALS] = CoreAdapter(service, AlterUserScramCredentialsMapping())
        acls = acls if acls is not None else _acls_of(service)
        if acls is not None:
            handlers[ApiKey.DESCRIBE_ACLS] = DescribeAclsAdapter(acls)
            handlers[ApiKey.CREATE_ACLS] = CoreAdapter(service, CreateAclsMapping())
            handlers[ApiKey.DELETE_ACLS] = CoreAdapter(service, DeleteAclsMapping())
    if topic_reader is not None:
        handlers[ApiKey.LIST_OFFSETS] = ListOffsetsAdapter(topic_reader)
        handlers[ApiKey.FETCH] = FetchAdapter(topic_reader)
    if topic_writer is not None:
        handlers[ApiKey.PRODUCE] = ProduceAdapter(topic_writer)
        handlers[ApiKey.INIT_PRODUCER_ID] = InitProducerIdAdapter(producer_ids or ProducerIdAllocator(0))
    if topic_admin is not None:
        handlers[ApiKey.CREATE_TOPICS] = CreateTopicsAdapter(topic_admin)
        handlers[ApiKey.CREATE_PARTITIONS] = CreatePartitionsAdapter(topic_admin)
        handlers[ApiKey.DESCRIBE_CONFIGS] = DescribeConfigsAdapter(topic_admin)
        handlers[ApiKey.DELETE_TOPICS] = DeleteTopicsAdapter()
    handlers.update(extra or {})
    served = {key: ranges[key] for key in (*handlers, ApiKey.API_VERSIONS)}
    handlers[ApiKey.API_VERSIONS] = ApiVersionsAdapter(served)
    return authorized(handlers, acls, source) if acls is not None else handlers


def _acls_of(service: CoordinatorService) -> AclStore | None:
    """The ACLs of the core behind ``service`` (through the runtime's write guard), if it keeps any."""
    acls = getattr(service.coordinator, "acls", None)
    return acls if isinstance(acls, AclStore) else None


def served_ranges(dispatcher: Dispatcher, ranges: Mapping[ApiKey, VersionRange] = SUPPORTED_VERSIONS) -> dict[
    ApiKey, VersionRange
]:
    """The advertised ranges restricted to the APIs ``dispatcher`` serves."""
    return {key: r for key, r in ranges.items() if key in dispatcher}
