"""The rebalance listener: what the application is told when partitions move.

Callbacks run on the thread that calls :meth:`GroupMember.poll`, never on the heartbeat thread, in Kafka's order:
revoked (before the rejoin, or after a cooperative assignment took partitions away), then assigned; lost when the
member found out its generation ended without a clean hand-over (session expiry, fencing of its generation).
"""

from __future__ import annotations

from typing import Protocol

from kafka.structs import TopicPartition


class RebalanceListener(Protocol):
    """Implement any subset by subclassing :class:`BaseRebalanceListener`."""

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        """These partitions are being given up cleanly: commit their progress now."""

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        """These partitions are newly owned (the cooperative protocol reports only the added ones)."""

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        """These partitions may already be owned by someone else: do not commit them."""


class BaseRebalanceListener:
    """A listener that does nothing; override what you need."""

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        """Nothing by default."""

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        """Nothing by default."""

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        """Nothing by default."""
