"""A real single-node Apache Kafka broker (KRaft, broker and controller in one JVM) for development and tests.

It runs Apache Kafka from the jars ``make install`` fetched (``.venv/jars/kafka``), so tests and benchmarks can
compare groupcoord with Kafka's own group coordinator and read real topics. Not for production: no security, one
replica of everything.

>>> from groupcoord.devbroker import KafkaBroker, Record          # doctest: +SKIP
>>> with KafkaBroker.start("var/kafka") as broker:
...     broker.create_topic("orders", partitions=3)
...     offsets = broker.produce("orders", [Record(b"v0", partition=0), Record(b"v1", partition=0)])
...     # offsets == {0: range(0, 2)}; clients connect to broker.bootstrap ("127.0.0.1:PORT")

``groupcoord dev-broker --listen 127.0.0.1:9092 --log-dir DIR`` runs one from the command line.
"""

from groupcoord.devbroker.broker import (
    JVM_OPTIONS,
    PEER_JVM_OPTIONS,
    TEST_JVM_OPTIONS,
    BrokerError,
    KafkaBroker,
    parse_listen,
)
from groupcoord.devbroker.topics import ProduceError, Record, create_topic, produce

__all__ = ["JVM_OPTIONS", "PEER_JVM_OPTIONS", "TEST_JVM_OPTIONS", "BrokerError", "KafkaBroker", "ProduceError",
           "Record", "create_topic", "parse_listen", "produce"]
