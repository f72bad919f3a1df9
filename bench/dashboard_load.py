"""The load ``bench.dashboard`` runs against a ``serve`` while Prometheus scrapes it: real Kafka clients, each in a
thread of its own, until stopped.

- a kafka-python producer: about ``rate`` records a second, keyed, to topic ``orders``;
- group ``billing`` (classic protocol, range): three kafka-python consumers committing after every poll;
- group ``audit`` (KIP-848, ``group.protocol=consumer``): two librdkafka consumers committing after every batch;
- group ``reports`` (classic): one slow kafka-python consumer, so that one group lags;
- the first member of ``billing`` and of ``audit`` leaves and rejoins every ``churn_s`` seconds: rebalances all along.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable

import confluent_kafka
from kafka import KafkaConsumer, KafkaProducer

log = logging.getLogger("bench.dashboard")

TOPIC = "orders"


class Load:
    """The clients above, against ``bootstrap`` (start with :meth:`start`, end with :meth:`stop`)."""

    def __init__(self, bootstrap: str, *, rate: int = 200, churn_s: float = 40.0) -> None:
        self.bootstrap = bootstrap
        self.rate = rate
        self.churn_s = churn_s
        self.counts: Counter[str] = Counter()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start every client's thread."""
        workers: list[tuple[str, Callable[[], None]]] = [("producer", self._produce)]
        slow = functools.partial(self._classic, max_poll_records=20, pause_s=0.5)
        workers += [(f"billing-{i}", self._member(self._classic, "billing", churns=i == 0)) for i in range(3)]
        workers += [(f"audit-{i}", self._member(self._kip848, "audit", churns=i == 0)) for i in range(2)]
        workers += [("reports-0", self._member(slow, "reports", churns=False))]
        for name, work in workers:
            thread = threading.Thread(target=self._guarded, args=(name, work), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Stop every client (consumers leave their groups) and wait for them."""
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self.counts[what] += n

    def _guarded(self, name: str, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:
            log.exception("load client %s failed", name)
            self._count("client_failures")

    def _produce(self) -> None:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=20, acks=1)
        batch, key = max(1, self.rate // 10), 0
        while not self._stop.wait(0.1):
            for _ in range(batch):
                producer.send(TOPIC, key=str(key % 97).encode(), value=b"x" * 100)
                key += 1
            self._count("produced", batch)
        producer.close()

    def _member(self, run: Callable[[str, float | None], None], group: str, *, churns: bool) -> Callable[[], None]:
        """Run one member of ``group``; one that ``churns`` leaves and rejoins every ``churn_s`` seconds."""
        lifetime = self.churn_s if churns else None

        def loop() -> None:
            while not self._stop.is_set():
                run(group, lifetime)
                self._count(f"{group}_rejoins")
                self._stop.wait(2.0)

        return loop

    def _until(self, lifetime: float | None) -> float:
        return time.monotonic() + (lifetime if lifetime is not None else 1e9)

    def _classic(self, group: str, lifetime: float | None, *, max_poll_records: int = 500,
                 pause_s: float = 0.0) -> None:
        consumer = KafkaConsumer(TOPIC, bootstrap_servers=self.bootstrap, group_id=group,
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 max_poll_records=max_poll_records)
        until = self._until(lifetime)
        try:
            while not self._stop.is_set() and time.monotonic() < until:
                read = sum(len(records) for records in consumer.poll(500).values())
                if read:
                    consumer.commit()
                    self._count(f"{group}_consumed", read)
                if pause_s:
                    self._stop.wait(pause_s)
        finally:
            consumer.close()

    def _kip848(self, group: str, lifetime: float | None) -> None:
        consumer = confluent_kafka.Consumer({"bootstrap.servers": self.bootstrap, "group.id": group,
                                             "group.protocol": "consumer", "auto.offset.reset": "earliest",
                                             "enable.auto.commit": False})
        consumer.subscribe([TOPIC])
        until = self._until(lifetime)
        try:
            while not self._stop.is_set() and time.monotonic() < until:
                messages = [m for m in consumer.consume(num_messages=200, timeout=0.5) if m.error() is None]
                if messages:
                    consumer.commit(asynchronous=False)
                    self._count(f"{group}_consumed", len(messages))
        finally:
            consumer.close()
