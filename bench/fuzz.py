"""Wire fuzzing benchmark: a seeded byte mutator over valid request frames, fed to the in-process decoder+dispatcher.

The seed corpus holds one well-formed frame per served API at its lowest and highest advertised version, with
realistic contents (groups, members, topics, consumer-protocol metadata). Each input is one seed (or a splice of
two, or plain random bytes) put through a few random mutations: bit flips, interesting integers written over
size and count fields, the API version or key replaced, bytes inserted, deleted or duplicated, truncation,
extension, a wrong frame size. :class:`bench.fuzz_target.FuzzTarget` checks every input (see there).

Full mode runs 1,000,000 inputs; quick mode 100,000. The report gives the count, the outcome mix and the failures
(with the seed that reproduces each: ``Mutator(seed).input(index)``).
"""

from __future__ import annotations

import random
import struct
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from kafka.protocol.admin import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import (
    FetchRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    OffsetDeleteRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.record import MemoryRecordsBuilder

from bench.fuzz_target import FuzzFailure, FuzzTarget, iterate
from bench.results_io import write_result
from groupcoord.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.schemas import encode_request
from groupcoord.server.versions import SUPPORTED_VERSIONS, ApiKey

FULL_INPUTS = 1_000_000
QUICK_INPUTS = 100_000
BENCH_SEED = 20240607

_INTERESTING_16 = (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, -0x8000)
_INTERESTING_32 = (0, 1, -1, 0x7FFFFFFF, -0x80000000, 0xFFFF, 0x10000, 4096, 1 << 24)


def _seed_request(key: ApiKey, version: int) -> Any:
    """A populated request of ``key`` at ``version`` (fields a version lacks are ignored)."""
    subscription = encode_subscription(Subscription(topics=("t1", "events"), owned_partitions=(
        TopicPartitions("t1", (0, 1)),), generation_id=3, rack_id="r1"))
    assignment = encode_assignment(Assignment(partitions=(TopicPartitions("t1", (0, 1, 2)),)))
    fetch_partition = FetchRequest.FetchTopic.FetchPartition
    list_partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition
    produce_data = ProduceRequest.TopicProduceData
    builders: dict[ApiKey, Callable[[], Any]] = {
        ApiKey.PRODUCE: lambda: ProduceRequest(
            version=version, transactional_id=None, acks=1, timeout_ms=5000, topic_data=[produce_data(
                name="t1", partition_data=[produce_data.PartitionProduceData(index=0, records=_record_batch())])]),
        ApiKey.INIT_PRODUCER_ID: lambda: InitProducerIdRequest(
            version=version, transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
        ApiKey.API_VERSIONS: lambda: ApiVersionsRequest(version=version, client_software_name="fuzz",
                                                client_software_version="1.0"),
        ApiKey.METADATA: lambda: MetadataRequest(
            version=version, topics=[MetadataRequest.MetadataRequestTopic(name="t1")], allow_auto_topic_creation=False),
        ApiKey.FIND_COORDINATOR: lambda: FindCoordinatorRequest(version=version, key="g", key_type=0,
                                                        coordinator_keys=["g", "h"]),
        ApiKey.JOIN_GROUP: lambda: JoinGroupRequest(
            version=version, group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=20000, member_id="",
            group_instance_id="i-1", protocol_type="consumer", reason="fuzz", protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription),
                JoinGroupRequest.JoinGroupRequestProtocol(name="roundrobin", metadata=subscription)]),
        ApiKey.SYNC_GROUP: lambda: SyncGroupRequest(
            version=version, group_id="g", generation_id=1, member_id="m-1", group_instance_id="i-1",
            protocol_type="consumer", protocol_name="range", assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id="m-1", assignment=assignment)]),
        ApiKey.HEARTBEAT: lambda: HeartbeatRequest(version=version, group_id="g", generation_id=1, member_id="m-1",
                                           group_instance_id="i-1"),
        ApiKey.LEAVE_GROUP: lambda: LeaveGroupRequest(version=version, group_id="g", member_id="m-1", members=[
            LeaveGroupRequest.MemberIdentity(member_id="m-1", group_instance_id="i-1", reason="fuzz")]),
        ApiKey.OFFSET_DELETE: lambda: OffsetDeleteRequest(version=version, group_id="g", topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(name="t1", partitions=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(partition_index=0)])]),
        ApiKey.DESCRIBE_GROUPS: lambda: DescribeGroupsRequest(version=version, groups=["g", "h"],
                                                      include_authorized_operations=False),
        ApiKey.LIST_GROUPS: lambda: ListGroupsRequest(version=version, states_filter=["Stable"]),
        ApiKey.LIST_OFFSETS: lambda: ListOffsetsRequest(version=version, replica_id=-1, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name="t1", partitions=[
                list_partition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])]),
        ApiKey.FETCH: lambda: FetchRequest(
            version=version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
            session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                FetchRequest.FetchTopic(topic="t1", partitions=[
                    fetch_partition(partition=0, current_leader_epoch=-1, fetch_offset=1, log_start_offset=-1,
                                    partition_max_bytes=1 << 16)])]),
    }
    return builders[key]()


def _record_batch() -> bytes:
    """An idempotent v2 record batch of two records, one with a header."""
    builder = MemoryRecordsBuilder(2, 0, 1 << 16, producer_id=1, producer_epoch=0, base_sequence=0)
    builder.append(1_700_000_000_000, b"k", b"v", [("h", b"1")])
    builder.append(1_700_000_000_001, None, b"w", [])
    builder.close()
    return bytes(builder.buffer())


def seed_frames() -> list[bytes]:
    """Framed, valid requests: every served API at its lowest and highest advertised version."""
    frames: list[bytes] = []
    correlation_id = 0
    for key, advertised in SUPPORTED_VERSIONS.items():
        for version in sorted({advertised.min_version, advertised.max_version}):
            correlation_id += 1
            if key in SCHEMA_BODIES:
                payload = encode_request(key, version, correlation_id, "fuzz", _schema_body(key, version))
                frames.append(struct.pack(">i", len(payload)) + payload)
                continue
            request = _seed_request(key, version)
            request.with_header(correlation_id=correlation_id, client_id="fuzz")
            frames.append(bytes(request.encode(header=True, framed=True)))
    return frames


FUZZ_TOPIC_ID = uuid.UUID("6b1f1a9e-0000-4000-8000-00000000f022")
"""A topic id the seeds of v10 name (unknown to the fuzz target, so UNKNOWN_TOPIC_ID is part of what is fuzzed)."""

SCHEMA_BODIES: dict[ApiKey, dict[str, Any]] = {
    ApiKey.OFFSET_COMMIT: {"GroupId": "g", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
                           "RetentionTimeMs": -1},
    ApiKey.OFFSET_FETCH: {},
    ApiKey.CONSUMER_GROUP_HEARTBEAT: {
        "GroupId": "g848", "MemberId": "fuzz-member-0000000000", "MemberEpoch": 0, "RebalanceTimeoutMs": 30_000,
        "SubscribedTopicNames": ["t1"], "TopicPartitions": []},
    ApiKey.CONSUMER_GROUP_DESCRIBE: {"GroupIds": ["g848", "g"], "IncludeAuthorizedOperations": False},
    ApiKey.CREATE_TOPICS: {"Topics": [
        {"Name": "fuzz-new", "NumPartitions": 2, "ReplicationFactor": 1, "Assignments": [], "Configs": []},
        {"Name": "t1", "NumPartitions": -1, "ReplicationFactor": -1, "Assignments": [],
         "Configs": [{"Name": "cleanup.policy", "Value": "delete"}]}], "timeoutMs": 1000, "validateOnly": True},
    ApiKey.CREATE_PARTITIONS: {"Topics": [{"Name": "events", "Count": 4, "Assignments": None}], "TimeoutMs": 1000,
                               "ValidateOnly": True},
    ApiKey.DESCRIBE_CONFIGS: {"Resources": [{"ResourceType": 2, "ResourceName": "t1", "ConfigurationKeys": None}],
                              "IncludeSynonyms": False, "IncludeDocumentation": False},
    ApiKey.DELETE_TOPICS: {"TopicNames": ["t1"], "TimeoutMs": 1000},
    ApiKey.DELETE_GROUPS: {"GroupsNames": ["h", ""]},
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: {"Topics": [{"Name": "t1"}, {"Name": "nope"}], "ResponsePartitionLimit": 2,
                                       "Cursor": None},
    ApiKey.SASL_HANDSHAKE: {"Mechanism": "SCRAM-SHA-256"},
    ApiKey.SASL_AUTHENTICATE: {"AuthBytes": b"n,,n=fuzz,r=fyko+d2lbbFgONRv9qkxdawL"},
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: {"Users": [{"Name": "fuzz"}, {"Name": "nobody"}]},
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: {
        "Deletions": [{"Name": "gone", "Mechanism": 1}],
        "Upsertions": [{"Name": "fuzz", "Mechanism": 2, "Iterations": 4096, "Salt": b"salt" * 8,
                        "SaltedPassword": b"\x01" * 64}]},
    ApiKey.DESCRIBE_ACLS: {"ResourceTypeFilter": 2, "ResourceNameFilter": "t1", "PatternTypeFilter": 2,
                           "PrincipalFilter": None, "HostFilter": None, "Operation": 1, "PermissionType": 1},
    ApiKey.CREATE_ACLS: {"Creations": [
        {"ResourceType": 2, "ResourceName": "t", "ResourcePatternType": 4, "Principal": "User:fuzz", "Host": "*",
         "Operation": 3, "PermissionType": 3},
        {"ResourceType": 3, "ResourceName": "g", "ResourcePatternType": 3, "Principal": "User:*", "Host": "10.0.0.1",
         "Operation": 2, "PermissionType": 2}]},
    ApiKey.DELETE_ACLS: {"Filters": [
        {"ResourceTypeFilter": 1, "ResourceNameFilter": None, "PatternTypeFilter": 1, "PrincipalFilter": "User:fuzz",
         "HostFilter": None, "Operation": 1, "PermissionType": 1}]},
}
"""Seed bodies of the APIs served through Kafka's schemas (kafka-python has no classes for them), valid at every
advertised version but where :func:`_schema_body` changes them."""


def _schema_body(key: ApiKey, version: int) -> dict[str, Any]:
    """The seed body of ``key`` at ``version`` (DeleteTopics v6 names topics in structs, with an id or a name;
    OffsetCommit v10 and OffsetFetch v10 name topics by id, OffsetFetch v8+ holds groups)."""
    if key == ApiKey.DELETE_TOPICS and version >= 6:
        return {"Topics": [{"Name": "t1", "TopicId": uuid.UUID(int=0)}], "TimeoutMs": 1000}
    topic = {"TopicId": FUZZ_TOPIC_ID} if version >= 10 else {"Name": "t1"}
    if key == ApiKey.OFFSET_COMMIT:
        return {**SCHEMA_BODIES[key], "Topics": [{**topic, "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": 10 + p, "CommittedLeaderEpoch": -1, "CommittedMetadata": "m"}
            for p in range(3)]}]}
    if key == ApiKey.OFFSET_FETCH and version >= 8:
        return {"Groups": [{"GroupId": "g", "MemberId": None, "MemberEpoch": -1, "Topics": [
            {**topic, "PartitionIndexes": [0, 1]}]}], "RequireStable": False}
    if key == ApiKey.OFFSET_FETCH:
        return {"GroupId": "g", "Topics": [{"Name": "t1", "PartitionIndexes": [0, 1, 2]}], "RequireStable": False}
    return SCHEMA_BODIES[key]


class Mutator:
    """A seeded generator of fuzz inputs; ``input(i)`` is a pure function of the seed and ``i``."""

    def __init__(self, seed: int, seeds: list[bytes] | None = None) -> None:
        self.seed = seed
        self.seeds = seeds if seeds is not None else seed_frames()

    def inputs(self, count: int, start: int = 0) -> Iterator[bytes]:
        """Inputs ``start`` .. ``start + count - 1``."""
        for index in range(start, start + count):
            yield self.input(index)

    def input(self, index: int) -> bytes:
        """The ``index``-th input."""
        rng = random.Random(self.seed * 1_000_003 + index)
        roll = rng.random()
        if roll < 0.03:
            return rng.randbytes(rng.randrange(0, 64))
        data = bytearray(rng.choice(self.seeds))
        if roll < 0.10:
            other = rng.choice(self.seeds)
            cut = rng.randrange(4, len(data))
            data = data[:cut] + other[rng.randrange(4, len(other)):]
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 5))):
            self._mutate(rng, data)
        if len(data) >= 4 and rng.random() < 0.7:  # mostly keep the size prefix honest, so the body gets decoded
            struct.pack_into(">i", data, 0, len(data) - 4)
        return bytes(data)

    @staticmethod
    def _mutate(rng: random.Random, data: bytearray) -> None:
        size = len(data)
        kind = rng.randrange(10)
        at = rng.randrange(4, size) if size > 4 else 0
        if kind == 0 and size:
            data[at] ^= 1 << rng.randrange(8)
        elif kind == 1 and size:
            data[at] = rng.choice((0x00, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)))
        elif kind == 2 and size >= at + 2:
            struct.pack_into(">h", data, at, rng.choice(_INTERESTING_16))
        elif kind == 3 and size >= at + 4:
            value = rng.choice(_INTERESTING_32)
            struct.pack_into(">I" if value > 0x7FFFFFFF else ">i", data, at, value)
        elif kind == 4 and size >= 8:  # the API version
            struct.pack_into(">h", data, 6, rng.choice((*_INTERESTING_16, rng.randrange(-3, 20))))
        elif kind == 5 and size >= 6:  # the API key
            struct.pack_into(">h", data, 4, rng.choice((*[int(k) for k in ApiKey], rng.randrange(-2, 80))))
        elif kind == 6:
            del data[at:at + rng.randrange(1, 9)]
        elif kind == 7:
            data[at:at] = rng.randbytes(rng.randrange(1, 9))
        elif kind == 8 and size > 4:
            end = min(size, at + rng.randrange(1, 33))
            data[at:at] = data[at:end]
        else:
            del data[rng.randrange(0, size + 1):]


def run(count: int, seed: int = BENCH_SEED) -> dict[str, Any]:
    """Feed ``count`` mutated inputs to a fresh target; returns counts, outcome mix and failures."""
    target = FuzzTarget()
    outcomes: Counter[str] = Counter()
    failures: list[dict[str, Any]] = []
    answered = written = 0
    started = time.perf_counter()
    try:
        for index, result in enumerate(iterate(target, Mutator(seed).inputs(count))):
            if isinstance(result, FuzzFailure):
                outcomes["failure"] += 1
                if len(failures) < 20:
                    failures.append({"index": index, "error": str(result)})
                continue
            outcomes[result.reason] += 1
            answered += result.answered
            written += result.records_written
    finally:
        target.close()
    elapsed = time.perf_counter() - started
    return {
        "inputs": count,
        "seed": seed,
        "seconds": round(elapsed, 1),
        "inputs_per_s": round(count / elapsed),
        "responses": answered,
        "record_batches_written": written,
        "outcomes": dict(outcomes.most_common()),
        "failures": failures,
        "failure_count": outcomes["failure"],
    }


def main(full: bool) -> None:
    """Run the mutator (1,000,000 inputs in full mode, 100,000 quick) and record the result."""
    result = run(FULL_INPUTS if full else QUICK_INPUTS)
    print(f"fuzz: {result['inputs']} inputs in {result['seconds']} s, {result['failure_count']} failure(s); "
          f"outcomes {result['outcomes']}", flush=True)
    for failure in result["failures"]:
        print(f"  input {failure['index']}: {failure['error']}", flush=True)
    write_result(
        "fuzz",
        title="Wire fuzzing: seeded byte mutator over valid frames, in-process decoder + dispatcher",
        rows=[{"inputs": result["inputs"], "seed": result["seed"], "seconds": result["seconds"],
               "inputs_per_s": result["inputs_per_s"], "responses": result["responses"],
               "record_batches_written": result["record_batches_written"],
               "failures": result["failure_count"]}],
        summary={"inputs": result["inputs"], "failures": result["failure_count"], "outcomes": result["outcomes"],
                 "first_failures": result["failures"], "targets": {"failures": "0", "inputs (full)": ">= 1000000"}},
        notes="Each input is one client connection's bytes: framing, header and body decoding, the API adapter over "
        "a real core with an in-memory record log, and response encoding, checked for typed rejections only, no "
        "adapter exceptions, responses that decode back, and no record written for a rejected or all-error "
        "request. Outcomes: why each connection ended (a rejection closes it). 2 cores shared by ~8 "
        "engineers' jobs.",
    )
