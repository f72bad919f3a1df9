"""The coordinator's records: typed, frozen, built only through the factories below, and their storage codec.

Classic groups and offsets have their records here; consumer groups (KIP-848) have theirs in
:mod:`groupcoord.coordinator.consumer_records`, users' credentials in :mod:`groupcoord.coordinator.credential_records`,
ACLs in :mod:`groupcoord.coordinator.acl_records`,
and :data:`Record` and the codec cover all of them.

A record is a key and a value; the key is the identity compaction keeps (a group; a group's topic-partition) and a
``None`` value is a tombstone. :func:`encode_record` turns a record into an
:class:`~groupcoord.coordinator.encoded.EncodedRecord` (JSON, bytes as base64, ``format_version``);
:func:`decode_record` reverses it and refuses formats newer than this code understands.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any, NamedTuple, overload

from groupcoord.coordinator.acl_records import (
    ACL_KIND,
    AclRecord,
    acl_record_key,
    acl_record_payload,
    decode_acl_record,
)
from groupcoord.coordinator.consumer_records import (
    CONSUMER_GROUP_KINDS,
    ConsumerGroupRecord,
    consumer_record_key,
    consumer_record_payload,
    decode_consumer_record,
)
from groupcoord.coordinator.credential_records import (
    USER_CREDENTIAL_KIND,
    UserCredentialRecord,
    credential_record_key,
    credential_record_payload,
    decode_credential_record,
)
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.group.metadata import GroupMetadataValue, MemberMetadataValue
from groupcoord.protocol.named_tuples import from_rows
from groupcoord.protocol.requests import JoinGroupProtocol, OffsetCommitPartition

FORMAT_VERSION = 1
"""The record format this code writes and the newest it reads."""

GROUP_METADATA_KIND = "group_metadata"
OFFSET_COMMIT_KIND = "offset_commit"


class RecordFormatError(ValueError):
    """An encoded record cannot be decoded (malformed, unknown kind, or a newer format)."""


class OffsetValue(NamedTuple):
    """A committed offset. ``expire_timestamp_ms`` is set only by commits with an explicit retention time.

    Offsets and their records are named tuples, not frozen dataclasses like the other records: a commit makes
    one of each per partition, and a tuple is built several times faster. Give the fields by name.
    """

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True)
class GroupMetadataRecord:
    """A group's completed generation (``value``), or its deletion (``value is None``)."""

    group_id: str
    value: GroupMetadataValue | None


class OffsetCommitRecord(NamedTuple):
    """A committed offset of one partition (``value``), or its deletion (``value is None``); a named tuple (see
    :class:`OffsetValue`)."""

    group_id: str
    topic: str
    partition: int
    value: OffsetValue | None


_offset_value_of_row = from_rows(OffsetValue)
_offset_record_of_row = from_rows(OffsetCommitRecord)
_encoded_of_row = from_rows(EncodedRecord)

ClassicRecord = GroupMetadataRecord | OffsetCommitRecord
"""A record of a classic group or of a committed offset."""

Record = GroupMetadataRecord | OffsetCommitRecord | ConsumerGroupRecord | UserCredentialRecord | AclRecord
"""Any record the coordinator writes."""


# --- factories (the only place records are built) -----------------------------------------------------------------
def new_group_metadata_record(group_id: str, value: GroupMetadataValue) -> GroupMetadataRecord:
    """The record persisting ``group_id``'s completed generation."""
    return GroupMetadataRecord(group_id, value)


def new_group_tombstone(group_id: str) -> GroupMetadataRecord:
    """The record deleting ``group_id``'s metadata."""
    return GroupMetadataRecord(group_id, None)


def new_offset_commit_record(group_id: str, topic: str, partition: int, value: OffsetValue) -> OffsetCommitRecord:
    """The record persisting one committed offset."""
    return OffsetCommitRecord(group_id, topic, partition, value)


@dataclass(frozen=True, slots=True)
class OffsetCommits:
    """The offsets one commit writes, as columns: one object per request where the commit path would otherwise build
    a record and a value per partition.

    It stands for :meth:`records` (in that order: offset ``i`` is ``topics[i]``, ``partitions[i]``...), and every
    consumer of records has a columnar path for it: hard-state replay, the encoder (the same stored rows as those
    records) and the materializer. It is not a :data:`Record`: it only travels in a
    :class:`~groupcoord.coordinator.result.CoordinatorResult`'s records, which iterate as the records it stands for.
    """

    group_id: str
    topics: tuple[str, ...]
    partitions: tuple[int, ...]
    offsets: tuple[int, ...]
    leader_epochs: tuple[int, ...]
    metadata: tuple[str, ...]
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None

    def __len__(self) -> int:
        return len(self.partitions)

    def keys(self) -> Iterator[tuple[str, int]]:
        """Each offset's (topic, partition), in order."""
        return zip(self.topics, self.partitions, strict=True)

    def values(self) -> Iterator[OffsetValue]:
        """Each offset's value, in order, built without a Python call per offset."""
        return map(_offset_value_of_row, zip(self.offsets, self.leader_epochs, self.metadata,
                                             repeat(self.commit_timestamp_ms), repeat(self.expire_timestamp_ms)))

    def records(self) -> Iterator[OffsetCommitRecord]:
        """The records this block stands for, in order."""
        return map(_offset_record_of_row, zip(repeat(self.group_id), self.topics, self.partitions, self.values()))


RecordChunk = Record | OffsetCommits
"""What the core's results are made of: single records, and blocks of offsets each standing for several records."""


def chunk_size(chunk: RecordChunk) -> int:
    """How many records ``chunk`` is (or stands for)."""
    return len(chunk) if type(chunk) is OffsetCommits else 1


def _expanded(chunk: RecordChunk) -> Iterable[Record]:
    return chunk.records() if isinstance(chunk, OffsetCommits) else (chunk,)


class Records(Sequence[Record]):
    """Records of which some are held as blocks of offsets (:class:`OffsetCommits`): they iterate, index and compare
    (with other records or a tuple) as the records those blocks stand for, while :attr:`chunks` keeps the blocks for
    the columnar paths (replay, encoding, the materializer)."""

    __slots__ = ("_flat", "_length", "chunks")

    def __init__(self, chunks: Iterable[RecordChunk]) -> None:
        self.chunks: tuple[RecordChunk, ...] = tuple(chunks)
        """The records and blocks, in order."""
        self._length = sum(map(chunk_size, self.chunks))
        self._flat: tuple[Record, ...] | None = None

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Record]:
        return chain.from_iterable(map(_expanded, self.chunks))

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Record, ...]: ...

    def __getitem__(self, index: int | slice) -> Record | tuple[Record, ...]:
        return self.flat()[index]

    def flat(self) -> tuple[Record, ...]:
        """Every record, blocks expanded (built once)."""
        if self._flat is None:
            self._flat = tuple(self)
        return self._flat

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Records):
            return self.flat() == other.flat()
        if isinstance(other, tuple):
            return self.flat() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[Record]) -> Records:
        return Records((*self.chunks, *chunks_of(other)))

    def __radd__(self, other: Sequence[Record]) -> Records:
        return Records((*chunks_of(other), *self.chunks))

    def __repr__(self) -> str:
        return f"Records({self.flat()!r})"


def chunks_of(records: Iterable[RecordChunk]) -> tuple[RecordChunk, ...]:
    """``records`` as chunks: a :class:`Records`'s own (blocks kept whole), else the records themselves."""
    return records.chunks if isinstance(records, Records) else tuple(records)


def records_of(chunks: Sequence[RecordChunk]) -> Sequence[Record]:
    """``chunks`` as a sequence of records: a plain tuple when no chunk is a block, else :class:`Records`."""
    if any(type(chunk) is OffsetCommits for chunk in chunks):
        return Records(chunks)
    return tuple(chunks)  # type: ignore[arg-type]  # no block among them


def new_offset_commits(group_id: str, committed: Iterable[tuple[str, Sequence[OffsetCommitPartition]]],
                       now_ms: int, expire_timestamp_ms: int | None) -> OffsetCommits:
    """The block persisting ``committed`` ((topic, its committed partitions) pairs of one commit at ``now_ms``): its
    columns are the partitions' fields transposed, per topic, in C."""
    columns: list[tuple[tuple[str, ...], tuple[Any, ...], tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]] = []
    for topic, partitions in committed:
        if partitions:
            indexes, offsets, epochs, metadata = zip(*partitions, strict=True)
            columns.append(((topic,) * len(indexes), indexes, offsets, epochs, metadata))
    if len(columns) == 1:  # the usual case: one topic, its columns as they are
        topics, indexes, offsets, epochs, metadata = columns[0]
    else:
        topics, indexes, offsets, epochs, metadata = (tuple(chain.from_iterable(column)) for column in zip(
            *columns, strict=True)) if columns else ((), (), (), (), ())
    return OffsetCommits(group_id, topics, indexes, offsets, epochs, metadata, now_ms, expire_timestamp_ms)


def new_offset_tombstone(group_id: str, topic: str, partition: int) -> OffsetCommitRecord:
    """The record deleting one committed offset."""
    return OffsetCommitRecord(group_id, topic, partition, None)


# --- codec ----------------------------------------------------------------------------------------------------------
def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def _dumps(payload: Any) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _member_to_json(member: MemberMetadataValue) -> dict[str, Any]:
    return {
        "member_id": member.member_id, "group_instance_id": member.group_instance_id,
        "client_id": member.client_id, "client_host": member.client_host,
        "rebalance_timeout_ms": member.rebalance_timeout_ms, "session_timeout_ms": member.session_timeout_ms,
        "protocols": [[p.name, _b64(p.metadata)] for p in member.protocols],
        "assignment": _b64(member.assignment),
    }


def _member_from_json(data: dict[str, Any]) -> MemberMetadataValue:
    return MemberMetadataValue(
        member_id=str(data["member_id"]), group_instance_id=data["group_instance_id"],
        client_id=str(data["client_id"]), client_host=str(data["client_host"]),
        rebalance_timeout_ms=int(data["rebalance_timeout_ms"]), session_timeout_ms=int(data["session_timeout_ms"]),
        protocols=tuple(JoinGroupProtocol(str(name), _unb64(meta)) for name, meta in data["protocols"]),
        assignment=_unb64(data["assignment"]))


def _group_to_json(value: GroupMetadataValue) -> dict[str, Any]:
    return {
        "protocol_type": value.protocol_type, "generation_id": value.generation_id,
        "protocol_name": value.protocol_name, "leader_id": value.leader_id,
        "state_timestamp_ms": value.state_timestamp_ms,
        "members": [_member_to_json(m) for m in value.members],
    }


def _group_from_json(data: dict[str, Any]) -> GroupMetadataValue:
    return GroupMetadataValue(
        protocol_type=data["protocol_type"], generation_id=int(data["generation_id"]),
        protocol_name=data["protocol_name"], leader_id=data["leader_id"],
        state_timestamp_ms=int(data["state_timestamp_ms"]),
        members=tuple(_member_from_json(m) for m in data["members"]))


_json_string = functools.lru_cache(maxsize=4096)(json.dumps)
"""A string as JSON (ASCII, as :func:`_dumps` writes it), cached: group ids, topics and metadata repeat."""


_OFFSET_VALUE_TEMPLATE = (b'{"commit_timestamp_ms":%d,"expire_timestamp_ms":%s,"leader_epoch":%d,"metadata":%s,'
                          b'"offset":%d}')
"""An offset value's stored bytes (:func:`_dumps` of the dict of its fields, keys sorted) from its fields, the JSON ones
(expiry, metadata) as JSON; ``%d`` writes an int subclass as its int."""


@functools.lru_cache(maxsize=4096)
def _json_bytes(text: str) -> bytes:
    """``text`` as JSON bytes (ASCII, as :func:`_dumps` writes it), cached: metadata strings repeat."""
    return _json_string(text).encode("ascii")


def _offset_value_bytes(value: OffsetValue) -> bytes:
    # The exact bytes _dumps gives for the dict of its fields, written directly: json.dumps of the dict costs several
    # times more.
    expire = value.expire_timestamp_ms
    return _OFFSET_VALUE_TEMPLATE % (value.commit_timestamp_ms, b"null" if expire is None else b"%d" % expire,
                                     value.leader_epoch, _json_bytes(value.metadata), value.offset)


def _offset_from_json(data: dict[str, Any]) -> OffsetValue:
    expire = data["expire_timestamp_ms"]
    return OffsetValue(offset=int(data["offset"]), leader_epoch=int(data["leader_epoch"]),
                       metadata=str(data["metadata"]), commit_timestamp_ms=int(data["commit_timestamp_ms"]),
                       expire_timestamp_ms=None if expire is None else int(expire))


@functools.lru_cache(maxsize=65536)
def offset_key(group_id: str, topic: str, partition: int) -> str:
    """The compaction key of an offset record: ``json.dumps([group_id, topic, partition])`` without spaces."""
    return f"[{_json_string(group_id)},{_json_string(topic)},{int(partition)}]"


def encode_record(record: Record) -> EncodedRecord:
    """The storage form of ``record``."""
    if isinstance(record, OffsetCommitRecord):  # first: most records are offset commits
        value = None if record.value is None else _offset_value_bytes(record.value)
        return EncodedRecord(OFFSET_COMMIT_KIND, offset_key(record.group_id, record.topic, record.partition), value,
                             FORMAT_VERSION)
    if isinstance(record, GroupMetadataRecord):
        value = None if record.value is None else _dumps(_group_to_json(record.value))
        return EncodedRecord(GROUP_METADATA_KIND, record.group_id, value, FORMAT_VERSION)
    if isinstance(record, UserCredentialRecord):
        payload = credential_record_payload(record)
        return EncodedRecord(USER_CREDENTIAL_KIND, credential_record_key(record),
                             None if payload is None else _dumps(payload), FORMAT_VERSION)
    if isinstance(record, AclRecord):
        payload = acl_record_payload(record)
        return EncodedRecord(ACL_KIND, acl_record_key(record), None if payload is None else _dumps(payload),
                             FORMAT_VERSION)
    kind, key = consumer_record_key(record)
    payload = consumer_record_payload(record)
    return EncodedRecord(kind, key, None if payload is None else _dumps(payload), FORMAT_VERSION)


def encode_offset_commits(commits: OffsetCommits) -> Iterator[EncodedRecord]:
    """The stored form of the records ``commits`` stands for (the same rows as :func:`encode_record` of each),
    built column by column without a Python call per offset."""
    expire = commits.expire_timestamp_ms
    values = map(_OFFSET_VALUE_TEMPLATE.__mod__, zip(
        repeat(commits.commit_timestamp_ms), repeat(b"null" if expire is None else b"%d" % expire),
        commits.leader_epochs, map(_json_bytes, commits.metadata), commits.offsets))
    keys = map(offset_key, repeat(commits.group_id), commits.topics, commits.partitions)
    return map(_encoded_of_row, zip(repeat(OFFSET_COMMIT_KIND), keys, values, repeat(FORMAT_VERSION)))


def encode_records(records: Iterable[RecordChunk]) -> list[EncodedRecord]:
    """:func:`encode_record` of each of ``records`` (blocks of offsets as the records they stand for), offset
    commits (most records) without a call of it each."""
    encoded: list[EncodedRecord] = []
    for record in chunks_of(records):
        if type(record) is OffsetCommits:
            encoded.extend(encode_offset_commits(record))
        elif type(record) is OffsetCommitRecord and record.value is not None:
            key, value = offset_key(record.group_id, record.topic, record.partition), _offset_value_bytes(record.value)
            encoded.append(_encoded_of_row((OFFSET_COMMIT_KIND, key, value, FORMAT_VERSION)))
        else:
            assert not isinstance(record, OffsetCommits)
            encoded.append(encode_record(record))
    return encoded


def decode_record(encoded: EncodedRecord) -> Record:
    """The typed record stored as ``encoded``; raises :class:`RecordFormatError` when it cannot be read."""
    if encoded.format_version > FORMAT_VERSION:
        raise RecordFormatError(
            f"record format {encoded.format_version} is newer than this groupcoord reads ({FORMAT_VERSION}); "
            "upgrade groupcoord")
    try:
        payload = None if encoded.value is None else json.loads(encoded.value.decode("utf-8"))
        if encoded.kind == GROUP_METADATA_KIND:
            return GroupMetadataRecord(encoded.key, None if payload is None else _group_from_json(payload))
        if encoded.kind == OFFSET_COMMIT_KIND:
            group_id, topic, partition = json.loads(encoded.key)
            return OffsetCommitRecord(str(group_id), str(topic), int(partition),
                                      None if payload is None else _offset_from_json(payload))
        if encoded.kind in CONSUMER_GROUP_KINDS:
            return decode_consumer_record(encoded.kind, encoded.key, payload)
        if encoded.kind == USER_CREDENTIAL_KIND:
            return decode_credential_record(encoded.key, payload)
        if encoded.kind == ACL_KIND:
            return decode_acl_record(encoded.key, payload)
    except (ValueError, KeyError, TypeError) as exc:
        raise RecordFormatError(f"malformed {encoded.kind} record {encoded.key!r}: {exc}") from None
    raise RecordFormatError(f"unknown record kind {encoded.kind!r}")
