"""The version policy: advertised ranges are codable by kafka-python, imply a 3.2+ broker to it, and are published."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest

from groupcoord.protocol.errors import Errors
from groupcoord.protocol.schemas import api_versions
from groupcoord.server.codec import SCHEMAS
from groupcoord.server.schema_apis import SCHEMA_API_KEYS
from groupcoord.server.versions import SUPPORTED_VERSIONS, ApiKey, version_table
from tests.server.conftest import CoordinatorStack, RawClient

COMPATIBILITY_DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"


@pytest.mark.parametrize("api_key", sorted(SUPPORTED_VERSIONS), ids=lambda key: key.name)
def test_every_advertised_version_is_within_the_codecs_schemas(api_key: ApiKey) -> None:
    """kafka-python's classes, or Kafka's own schemas for the APIs served through them (KIP-848's)."""
    advertised = SUPPORTED_VERSIONS[api_key]
    if api_key in SCHEMA_API_KEYS:
        kafka = api_versions()[api_key]
        assert kafka.min_version <= advertised.min_version <= advertised.max_version <= kafka.max_version
        return
    for schema in SCHEMAS[api_key]:
        low, high = schema.valid_versions
        assert low <= advertised.min_version <= advertised.max_version <= high, schema.__name__


def test_policy_caps_from_the_issue() -> None:
    assert SUPPORTED_VERSIONS[ApiKey.JOIN_GROUP].max_version == 9  # KIP-814 SkipAssignment
    assert SUPPORTED_VERSIONS[ApiKey.OFFSET_COMMIT].max_version == 10  # topic ids, through Kafka's schemas
    assert SUPPORTED_VERSIONS[ApiKey.OFFSET_FETCH].max_version == 10
    assert SUPPORTED_VERSIONS[ApiKey.FIND_COORDINATOR].max_version >= 4  # batched lookups
    assert SUPPORTED_VERSIONS[ApiKey.OFFSET_FETCH].max_version >= 8  # batched groups


def test_kafka_python_infers_a_broker_of_4_2_so_static_membership_stays_on() -> None:
    """ListOffsets v11 is what makes it 4.2; without it 3.3 (DescribeAcls v3, the USER resource type of 3.3; JoinGroup
    v9 alone gives 3.2): static membership needs 2.3."""
    ranges = {int(key): (r.min_version, r.max_version) for key, r in SUPPORTED_VERSIONS.items()}
    assert infer_broker_version_from_api_versions(ranges) == (4, 2)
    ranges[int(ApiKey.LIST_OFFSETS)] = (1, 7)
    assert infer_broker_version_from_api_versions(ranges) == (3, 3)
    for acl_api in (ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        del ranges[int(acl_api)]
    assert infer_broker_version_from_api_versions(ranges) == (3, 2)


def test_compatibility_doc_publishes_exactly_the_advertised_ranges() -> None:
    assert version_table() in COMPATIBILITY_DOC.read_text(encoding="utf-8")


@pytest.mark.integration
def test_api_versions_advertises_every_served_api(
    coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]
) -> None:
    stack = coordinator_stack()
    response = raw_client(stack.running.address).request(
        ApiVersionsRequest(version=3, client_software_name="raw", client_software_version="1")
    )
    advertised = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
    # ConsumerGroupHeartbeat only where consumer groups can be assigned (tests/server/test_consumer_group_protocol.py)
    assert advertised == {int(key): (r.min_version, r.max_version) for key, r in SUPPORTED_VERSIONS.items()
                          if key != ApiKey.CONSUMER_GROUP_HEARTBEAT}


@pytest.mark.integration
def test_batched_find_coordinator_answers_every_key_with_this_endpoint(
    coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]
) -> None:
    stack = coordinator_stack()
    response = raw_client(stack.running.address).request(
        FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=["g1", "g2", "g3"])
    )
    address = stack.running.address
    assert [(c.key, c.error_code, c.node_id, c.host, c.port) for c in response.coordinators] == [
        (key, 0, address.node_id, address.host, address.port) for key in ("g1", "g2", "g3")
    ]


@pytest.mark.integration
def test_find_coordinator_answers_not_available_while_the_service_does_not_serve(
    coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]
) -> None:
    stack = coordinator_stack()
    stack.service.unavailable = Errors.COORDINATOR_LOAD_IN_PROGRESS
    response = raw_client(stack.running.address).request(FindCoordinatorRequest(version=3, key="g1", key_type=0))
    assert (response.error_code, response.node_id) == (Errors.COORDINATOR_LOAD_IN_PROGRESS.code, -1)
