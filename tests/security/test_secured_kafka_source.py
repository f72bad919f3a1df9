"""Reading from a secured Kafka cluster (issue 31 section 3): the Kafka broker fixture with SASL_SSL and mutual TLS
(client certificates required), read by the ``groupcoord`` source from Spark's Kafka source option names and by the
ingestion job from a Kafka client properties file; both through the readers every engine uses (the log view for
bounds, the range reader for records)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from kafka.structs import TopicPartition

from bench.secured_broker import SecuredBroker, start_secured_broker
from bench.secured_certificates import Certificates
from groupcoord.config import ConfigError
from groupcoord.devbroker import Record
from groupcoord.ingest.sources import SourceSpec
from groupcoord.source.log_view import open_log_view
from groupcoord.source.options import SourceOptionError, parse_source_options
from groupcoord.source.records import RangeRead, read_range
from groupcoord.state_root import StateRoot

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

USER, PASSWORD = "reader", "reader-pw-77"
TOPIC = "secured-orders"
VALUES = [f"v{i}".encode() for i in range(6)]
CREDENTIALS = f'required username="{USER}" password="{PASSWORD}";'
SCRAM_JAAS = f"org.apache.kafka.common.security.scram.ScramLoginModule {CREDENTIALS}"
PLAIN_JAAS = f"org.apache.kafka.common.security.plain.PlainLoginModule {CREDENTIALS}"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, certificates: Certificates) -> Iterator[SecuredBroker]:
    """The broker with SASL_SSL requiring client certificates, and a topic of two partitions with records."""
    secured = start_secured_broker(tmp_path_factory.mktemp("mtls-broker"), certificates, {USER: PASSWORD},
                                   client_auth="required")
    try:
        secured.broker.create_topic(TOPIC, 2)
        secured.broker.produce(TOPIC, [Record(value, partition=i % 2) for i, value in enumerate(VALUES)])
        yield secured
    finally:
        secured.broker.stop()


@pytest.fixture
def client_keystore(tmp_path: Path, certificates: Certificates) -> Path:
    """The client's key and certificate in one PEM file, as Kafka's PEM key store holds them."""
    keystore = tmp_path / "client-keystore.pem"
    keystore.write_text(certificates.client_key.read_text() + certificates.client_cert.read_text())
    return keystore


def _java_settings(certificates: Certificates, keystore: Path, jaas: str, mechanism: str) -> dict[str, str]:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "sasl.jaas.config": jaas,
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certificates.ca),
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)}


def _read_all(root: StateRoot, servers: str, settings: dict[str, str]) -> list[bytes]:
    view = open_log_view(root, servers, settings, timeout_s=10)
    try:
        bounds = view.bounds([TopicPartition(TOPIC, p) for p in (0, 1)])
    finally:
        view.close()
    spec = RangeRead(include_headers=False, fail_on_data_loss=True, state_root=str(root.location),
                     bootstrap_servers=servers, kafka_settings=settings, poll_timeout_ms=10000)
    values: list[bytes] = []
    for tp, offsets in sorted(bounds.items()):
        for batch in read_range(spec, tp.topic, tp.partition, offsets.start, offsets.end):
            values.extend(batch.column("value").to_pylist())
    return values


def test_the_source_reads_with_spark_kafka_option_names(
        broker: SecuredBroker, certificates: Certificates, client_keystore: Path, tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    java = _java_settings(certificates, client_keystore, SCRAM_JAAS, "SCRAM-SHA-512")
    options = parse_source_options({"group.id": "g", "state.root": str(tmp_path / "root"), "subscribe": TOPIC,
                                    "kafka.bootstrap.servers": broker.sasl_ssl,
                                    **{f"kafka.{name}": value for name, value in java.items()}})
    assert options.kafka_settings["sasl.username"] == USER
    assert options.kafka_settings["ssl.ca.location"] == str(certificates.ca)
    assert sorted(_read_all(root, broker.sasl_ssl, dict(options.kafka_settings))) == sorted(VALUES)


def test_the_job_reads_with_a_client_properties_file(
        broker: SecuredBroker, certificates: Certificates, client_keystore: Path, tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    java = _java_settings(certificates, client_keystore, PLAIN_JAAS, "PLAIN")
    properties.write_text("# the job's Kafka client\n" + "".join(f"{k}={v}\n" for k, v in java.items()))
    root = StateRoot.open(tmp_path / "root", create=True)
    spec = SourceSpec.parse(f"kafka://{broker.sasl_ssl}", state_root=root, kafka_config_file=str(properties))
    assert PASSWORD not in repr(spec)
    view = spec.log_view()
    try:
        assert view.partition_counts(lambda name: name == TOPIC) == {TOPIC: 2}
    finally:
        view.close()
    assert sorted(_read_all(root, broker.sasl_ssl, dict(spec.kafka_settings))) == sorted(VALUES)


def test_without_a_client_certificate_or_with_a_wrong_password_nothing_is_read(
        broker: SecuredBroker, certificates: Certificates, client_keystore: Path, tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    java = _java_settings(certificates, client_keystore, SCRAM_JAAS, "SCRAM-SHA-512")
    no_certificate = {k: v for k, v in java.items() if not k.startswith("ssl.keystore")}
    wrong = {**java, "sasl.jaas.config": SCRAM_JAAS.replace(PASSWORD, "nope")}
    for settings in (no_certificate, wrong):
        options = parse_source_options({"group.id": "g", "state.root": str(tmp_path / "root"), "subscribe": TOPIC,
                                        "kafka.bootstrap.servers": broker.sasl_ssl,
                                        **{f"kafka.{name}": value for name, value in settings.items()}})
        view = open_log_view(root, broker.sasl_ssl, dict(options.kafka_settings), timeout_s=3)
        try:
            with pytest.raises(KafkaException):
                view.partition_counts(lambda name: True)
        finally:
            view.close()


def test_settings_librdkafka_cannot_take_are_refused_with_the_reason(tmp_path: Path) -> None:
    base = {"group.id": "g", "state.root": str(tmp_path), "subscribe": TOPIC, "kafka.bootstrap.servers": "h:9092"}
    with pytest.raises(SourceOptionError, match=r"ssl\.truststore\.type=JKS is not supported: librdkafka reads PEM"):
        parse_source_options({**base, "kafka.ssl.truststore.location": "/t.jks", "kafka.ssl.truststore.type": "JKS"})
    with pytest.raises(SourceOptionError, match=r"login module com\.example\.Krb5LoginModule is not supported"):
        parse_source_options({**base, "kafka.sasl.jaas.config": "com.example.Krb5LoginModule required;"})
    properties = tmp_path / "bad.properties"
    properties.write_text("ssl.keystore.password=secret\n")
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.password is not supported") as refused:
        SourceSpec.parse("kafka://h:9092", state_root=str(tmp_path), kafka_config_file=str(properties))
    assert "secret" not in str(refused.value).replace("ssl.keystore.password", "")
