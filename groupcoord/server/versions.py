"""The version policy: which Kafka APIs, at which versions, this endpoint advertises in ApiVersions.

Every range stays inside what kafka-python's schema classes can decode (requests) and encode (responses), and covers
what kafka-python 3.x and librdkafka negotiate:

- JoinGroup goes up to v9 (KIP-814 ``SkipAssignment``), so kafka-python infers a broker of 3.2 or newer and keeps
  static membership on. ListOffsets v11 makes it infer 4.2: kafka-python 3.0.12 turns nothing on past 3.0.
- OffsetCommit and OffsetFetch go to v10 (topics by id) and DeleteGroups to v3 through Kafka's own schemas
  (kafka-python's stop at v9 and v2).
  Every other group API is advertised at Kafka 4.4.0's full range (JoinGroup v0-v3 join without KIP-394's
  MEMBER_ID_REQUIRED round trip, as in Kafka).
- Fetch stops at v12 for the same reason (v13+ names topics by id). ListOffsets goes to v11 (``kafka-get-offsets
  --time -4`` asks for v8 at least): the tiered-storage timestamps answer as a broker without tiered storage.
- Metadata stops at v12: v13 only adds a top-level error code for KRaft brokers.
- Produce goes from v3 (the first with record batches v2, and the least the Java producer 4.x speaks) to v10: v11
  would make kafka-python infer a 3.8 broker, v13 names topics by id. InitProducerId stops at v4: v5 and up belong
  to transactions version 2 (KIP-890), which needs a transaction coordinator.
- ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) go to v1, as Kafka 4.4's: librdkafka asks for
  ConsumerGroupHeartbeat v1 exactly. kafka-python has no classes for them; they are decoded and encoded with Kafka's
  own message schemas (:mod:`groupcoord.server.schema_apis`), and kafka-python's broker-version inference ignores them.
- SaslHandshake v0-1 and SaslAuthenticate v0-2 (Kafka 4.4's ranges), DescribeUserScramCredentials and
  AlterUserScramCredentials v0 (their only version), through Kafka's schemas.
- CreateTopics, DeleteTopics, DescribeConfigs, CreatePartitions and DescribeTopicPartitions (what ``kafka-topics``
  uses) at Kafka 4.4's full ranges, through Kafka's schemas too.
- DescribeAcls, CreateAcls and DeleteAcls v1-3 (Kafka 4.4's ranges: 4.0 removed v0), through Kafka's schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum


class ApiKey(IntEnum):
    """The API keys this endpoint serves (Kafka's numbers)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    OFFSET_DELETE = 47
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    DESCRIBE_TOPIC_PARTITIONS = 75


@dataclass(frozen=True)
class VersionRange:
    """An inclusive range of API versions."""

    min_version: int
    max_version: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version


SUPPORTED_VERSIONS: Mapping[ApiKey, VersionRange] = {
    ApiKey.PRODUCE: VersionRange(3, 10),
    ApiKey.FETCH: VersionRange(4, 12),
    ApiKey.LIST_OFFSETS: VersionRange(1, 11),
    ApiKey.METADATA: VersionRange(0, 12),
    ApiKey.OFFSET_COMMIT: VersionRange(2, 10),
    ApiKey.OFFSET_FETCH: VersionRange(1, 10),
    ApiKey.FIND_COORDINATOR: VersionRange(0, 6),
    ApiKey.JOIN_GROUP: VersionRange(0, 9),
    ApiKey.HEARTBEAT: VersionRange(0, 4),
    ApiKey.LEAVE_GROUP: VersionRange(0, 5),
    ApiKey.SYNC_GROUP: VersionRange(0, 5),
    ApiKey.DESCRIBE_GROUPS: VersionRange(0, 6),
    ApiKey.LIST_GROUPS: VersionRange(0, 5),
    ApiKey.SASL_HANDSHAKE: VersionRange(0, 1),
    ApiKey.SASL_AUTHENTICATE: VersionRange(0, 2),
    ApiKey.API_VERSIONS: VersionRange(0, 4),
    ApiKey.INIT_PRODUCER_ID: VersionRange(0, 4),
    ApiKey.DESCRIBE_ACLS: VersionRange(1, 3),
    ApiKey.CREATE_ACLS: VersionRange(1, 3),
    ApiKey.DELETE_ACLS: VersionRange(1, 3),
    ApiKey.CREATE_TOPICS: VersionRange(2, 7),
    ApiKey.DELETE_TOPICS: VersionRange(1, 6),
    ApiKey.DESCRIBE_CONFIGS: VersionRange(1, 4),
    ApiKey.CREATE_PARTITIONS: VersionRange(0, 3),
    ApiKey.DELETE_GROUPS: VersionRange(0, 3),
    ApiKey.OFFSET_DELETE: VersionRange(0, 0),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: VersionRange(0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: VersionRange(0, 0),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: VersionRange(0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: VersionRange(0, 1),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: VersionRange(0, 0),
}


def supported_range(api_key: int, ranges: Mapping[ApiKey, VersionRange] = SUPPORTED_VERSIONS) -> VersionRange | None:
    """The advertised range for ``api_key``, or ``None`` when the key is not served at all."""
    try:
        return ranges.get(ApiKey(api_key))
    except ValueError:
        return None


def version_table(ranges: Mapping[ApiKey, VersionRange] = SUPPORTED_VERSIONS) -> str:
    """The advertised ranges as a Markdown table (``docs/compatibility.md`` embeds it; a test keeps them equal)."""
    lines = ["| API | Key | Versions |", "| --- | --- | --- |"]
    for key, advertised in sorted(ranges.items()):
        name = "".join(part.capitalize() for part in key.name.split("_"))
        lines.append(f"| {name} | {int(key)} | {advertised.min_version}-{advertised.max_version} |")
    return "\n".join(lines)
