"""The coordinator core: handlers that turn requests into records and responses, ``replay`` as the only writer of
hard state, timers as deferred handlers, and an injected clock. Pure: no Spark, deltalake, sockets or asyncio."""

from __future__ import annotations

from groupcoord.coordinator.clock import Clock, ManualClock, SystemClock
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.coordinator import GroupCoordinator, error_response
from groupcoord.coordinator.effects import (
    AssignmentMember,
    CompleteAssignment,
    CompleteTargetAssignment,
    Effect,
    NeedsAssignment,
    NeedsTargetAssignment,
    SubscribedTopic,
    TargetMember,
)
from groupcoord.coordinator.hard_state import HardState, RecordInvariantError
from groupcoord.coordinator.records import Record, RecordFormatError, decode_record, encode_record
from groupcoord.coordinator.result import CoordinatorResult

__all__ = [
    "AssignmentMember",
    "Clock",
    "CompleteAssignment",
    "CompleteTargetAssignment",
    "CoordinatorConfig",
    "CoordinatorResult",
    "Effect",
    "GroupCoordinator",
    "HardState",
    "ManualClock",
    "NeedsAssignment",
    "NeedsTargetAssignment",
    "Record",
    "RecordFormatError",
    "RecordInvariantError",
    "SubscribedTopic",
    "SystemClock",
    "TargetMember",
    "decode_record",
    "encode_record",
    "error_response",
]
