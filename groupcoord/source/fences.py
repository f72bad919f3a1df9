"""Ownership fences: what a query's member owns now, published for the other driver-side workers of its query.

The ``groupcoord`` source's member lives in the query's driver-side Python worker; a sink's commit runs in another
Python worker of the same driver. So the member publishes, after every rebalance it goes through, an
:class:`OwnershipFence`: its member id, its current generation, and for each partition it owns the generation in
which it acquired it. A file per member under a per-user directory of the driver's temporary directory
(``<tmp>/groupcoord-streaming-<uid>/<state root digest>/<group>/<member id>.json``), replaced atomically. It is
driver-local on purpose: both workers run on the driver's machine, and the fence is soft state that dies with the
query (the coordinator's generation check is the hard fence; this one adds the ownership check Kafka's classic
OffsetCommit does not make).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka.structs import TopicPartition

from groupcoord.storage.location import parse_location

FENCES_DIR_ENV = "GROUPCOORD_STREAMING_FENCES_DIR"
"""Overrides the directory the fences live under (tests, or a driver whose temporary directory is not shared)."""


def partition_key(tp: TopicPartition) -> str:
    """``"topic:partition"``: how the source's offsets and the fences name a partition (JSON keys are strings)."""
    return f"{tp.topic}:{tp.partition}"


def parse_partition_key(key: str) -> TopicPartition:
    """The inverse of :func:`partition_key` (topic names may not contain ``:``, partitions are integers)."""
    topic, _, partition = key.rpartition(":")
    return TopicPartition(topic, int(partition))


@dataclass(frozen=True)
class OwnershipFence:
    """A member's ownership as it stands: ``acquired`` maps each owned partition to the generation it came in."""

    group_id: str
    member_id: str
    generation_id: int
    acquired: Mapping[TopicPartition, int] = field(default_factory=dict)

    def to_json(self) -> str:
        """The fence as one JSON document (partition keys sorted)."""
        return json.dumps({"group": self.group_id, "member": self.member_id, "generation": self.generation_id,
                           "acquired": {partition_key(tp): g for tp, g in sorted(self.acquired.items())}})

    @classmethod
    def from_json(cls, text: str) -> OwnershipFence:
        """Parse :meth:`to_json`'s output."""
        data = json.loads(text)
        return cls(group_id=data["group"], member_id=data["member"], generation_id=int(data["generation"]),
                   acquired={parse_partition_key(k): int(v) for k, v in data["acquired"].items()})


def fences_dir(state_root: str | Path, group_id: str) -> Path:
    """The directory holding the fences of ``group_id``'s members for the state root at ``state_root``."""
    base = os.environ.get(FENCES_DIR_ENV) or str(Path(tempfile.gettempdir()) / f"groupcoord-streaming-{os.getuid()}")
    text = str(state_root)
    # an S3 root by its normal URI (s3a:// and s3:// name the same root), a directory resolved
    name = parse_location(text, settings={}, environ={}).uri if "://" in text else str(Path(text).resolve())
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    group = hashlib.sha256(group_id.encode()).hexdigest()[:16]  # group ids may hold any character
    return Path(base) / digest / group


def publish_fence(state_root: str | Path, fence: OwnershipFence) -> None:
    """Write ``fence`` atomically (a temporary file renamed over the old one)."""
    directory = fences_dir(state_root, fence.group_id)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{_file_name(fence.member_id)}.json"
    temporary = target.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(fence.to_json(), encoding="utf-8")
    os.replace(temporary, target)


def read_fence(state_root: str | Path, group_id: str, member_id: str) -> OwnershipFence | None:
    """The fence ``member_id`` last published, or ``None`` (it never did, or it left the group)."""
    target = fences_dir(state_root, group_id) / f"{_file_name(member_id)}.json"
    try:
        return OwnershipFence.from_json(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def withdraw_fence(state_root: str | Path, group_id: str, member_id: str) -> None:
    """Remove ``member_id``'s fence (it left the group: nothing it read may be committed any more)."""
    with contextlib.suppress(FileNotFoundError):
        (fences_dir(state_root, group_id) / f"{_file_name(member_id)}.json").unlink()


def _file_name(member_id: str) -> str:
    return hashlib.sha256(member_id.encode()).hexdigest()[:32]
