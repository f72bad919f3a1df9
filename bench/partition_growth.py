"""A growing topic under both group protocols, against Kafka's coordinator and groupcoord's (issue 30's benchmark).

Ten librdkafka consumers (confluent-kafka, every setting at its default but a short metadata refresh, the same on
both sides) own a topic of 100 partitions; the topic then grows to 1,000 partitions (CreatePartitions) and the run
times how long until the group owns all 1,000 again, each partition by exactly one consumer. Once with the classic
protocol (JoinGroup/SyncGroup, client-side assignment) and once with the consumer protocol of KIP-848
(``group.protocol=consumer``: the coordinator assigns, members reconcile), alternating, on a fresh Kafka 4.4.0 broker
and then on a fresh ``groupcoord serve --no-spark``: never both at once. Goal: groupcoord within 1.1x of the broker
for each protocol (the median of the runs). Command: ``python -m bench.run partition_growth`` (``--full``: more
runs).
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.peer_targets import GROUPCOORD, KAFKA, SIDES, coordinator
from bench.results_io import Check, write_result

CONSUMERS = 10
START_PARTITIONS = 100
GROWN_PARTITIONS = 1000
PROTOCOLS = ("classic", "consumer")
METADATA_REFRESH_MS = 1000
"""librdkafka's ``topic.metadata.refresh.interval.ms`` on both sides (its default is 5 minutes): how soon a classic
consumer notices the new partitions (a consumer-protocol member learns them from its coordinator)."""
TARGET_RATIO = 1.1
TIMEOUT_S = 300.0


@dataclass
class Member:
    """One consumer polling on its own thread; ``owned`` is its assignment after its latest poll."""

    consumer: Any
    owned: frozenset[int] = frozenset()
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(0.05)
            self.owned = frozenset(tp.partition for tp in self.consumer.assignment())
        self.consumer.close()


def owns_all(members: list[Member], partitions: int) -> bool:
    """Every partition is owned, and by one member only."""
    shares = [m.owned for m in members]
    return sum(len(s) for s in shares) == partitions and frozenset().union(*shares) == frozenset(range(partitions))


def wait_owned(members: list[Member], partitions: int) -> float:
    """Seconds until ``owns_all``; raises after :data:`TIMEOUT_S`."""
    started = time.monotonic()
    while not owns_all(members, partitions):
        if time.monotonic() - started > TIMEOUT_S:
            raise TimeoutError(f"the group did not own {partitions} partitions in {TIMEOUT_S} s")
        time.sleep(0.02)
    return time.monotonic() - started


def grow_once(bootstrap: str, protocol: str, name: str, *, consumers: int, start: int, grown: int) -> float:
    """One run: ``consumers`` of a new topic of ``start`` partitions, grown to ``grown``; seconds to own them all."""
    import confluent_kafka
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=start, replication_factor=1)])[name].result(60)
    settings = {"bootstrap.servers": bootstrap, "group.id": name, "group.protocol": protocol,
                "topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS}
    members = [Member(confluent_kafka.Consumer(settings)) for _ in range(consumers)]
    threads = []
    for member in members:
        member.consumer.subscribe([name])
        threads.append(threading.Thread(target=member.run, daemon=True))
        threads[-1].start()
    try:
        wait_owned(members, start)
        admin.create_partitions([NewPartitions(name, grown)])[name].result(60)
        return wait_owned(members, grown)
    finally:
        for member in members:
            member.stop.set()
        for thread in threads:
            thread.join(30)


def main(full: bool = False, *, consumers: int = CONSUMERS, start: int = START_PARTITIONS,
         grown: int = GROWN_PARTITIONS) -> None:
    """Both sides, both protocols alternating, 3 runs each (``full``: 7); writes ``partition_growth``."""
    runs = 7 if full else 3
    seconds: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as work:
        for side in SIDES:
            with coordinator(side, Path(work) / side, {}) as endpoint:
                bootstrap = f"{endpoint.host}:{endpoint.port}"
                for run in range(runs):
                    for protocol in PROTOCOLS if run % 2 == 0 else reversed(PROTOCOLS):
                        took = grow_once(bootstrap, protocol, f"growth-{protocol}-{run}", consumers=consumers,
                                         start=start, grown=grown)
                        seconds.setdefault((side, protocol), []).append(round(took, 3))
                        print(f"  {side} {protocol} run {run}: {took:.2f} s", flush=True)
    rows = [{"side": side, "protocol": protocol, "runs": len(values), "median_s": statistics.median(values),
             "max_s": max(values), "seconds": values} for (side, protocol), values in seconds.items()]
    ratios = {protocol: round(statistics.median(seconds[(GROUPCOORD, protocol)])
                              / statistics.median(seconds[(KAFKA, protocol)]), 3) for protocol in PROTOCOLS}
    write_result(
        "partition_growth",
        title=f"{consumers} consumers of a topic growing from {start} to {grown} partitions, classic and KIP-848",
        rows=rows,
        summary={f"{protocol}_ratio": ratio for protocol, ratio in ratios.items()},
        notes=("Seconds from CreatePartitions until the group owns every partition, each by one consumer; "
               "librdkafka (confluent-kafka) consumers at their defaults but topic.metadata.refresh.interval.ms="
               f"{METADATA_REFRESH_MS}; ratio: groupcoord's median over Kafka 4.4.0's (above 1: slower)."),
        checks=[Check("partition_growth", f"{protocol}_ratio", "speed", ratio, "<=", TARGET_RATIO)
                for protocol, ratio in ratios.items()],
    )
