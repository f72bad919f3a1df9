"""What both targets share: their group settings, their topics, and how a scenario addresses one of them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from groupcoord.server.api import BrokerAddress

GROUP_SETTINGS: dict[str, str] = {"group.initial.rebalance.delay.ms": "0"}
"""Set identically on the broker (``server.properties``) and on ``groupcoord serve`` (``--conf``); every other group
setting keeps its default, which is the same on both sides (session timeouts 6 s to 30 min, metadata 4096 bytes)."""

BROKER_ONLY_SETTINGS: dict[str, str] = {"group.consumer.assignment.interval.ms": "0"}
"""Set on the broker only. Kafka 4.4 computes a consumer group's new target assignment at most once a second by
default (the group shows ``Assigning`` and its members keep their assignment meanwhile); groupcoord computes it at once,
which is the broker with 0 (a difference kept: docs/compatibility.md)."""

TOPIC = "parity-orders"
OTHER_TOPIC = "parity-refunds"
TOPICS: dict[str, int] = {TOPIC: 3, OTHER_TOPIC: 2}
"""Created on both sides before the first scenario; no scenario creates or deletes topics."""

UNKNOWN_TOPIC = "parity-no-such-topic"


@dataclass(frozen=True)
class Target:
    """One side of the comparison: ``kafka`` (Kafka 4.4.0's coordinator) or ``groupcoord`` (``groupcoord serve``)."""

    name: str
    address: BrokerAddress

    @property
    def bootstrap(self) -> str:
        """``HOST:PORT`` for a client's ``bootstrap.servers``."""
        return f"{self.address.host}:{self.address.port}"


def group_name(node_name: str) -> str:
    """A group id of one test (the broker is shared by the package): ``parity-`` and the test's name, simplified."""
    return "parity-" + re.sub(r"[^A-Za-z0-9]+", "-", node_name).strip("-")
