"""TLS listeners with real sockets and certificates: SSL and SASL_SSL with kafka-python, mutual TLS with the
principal from the client certificate by Kafka's mapping rules, and groupcoord's own client checking host names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from kafka import KafkaConsumer

from bench.secured_certificates import CLIENT_DN, Certificates
from groupcoord.member.connection import BrokerConnection, ConnectionLostError
from groupcoord.security.config import ClientSecurity
from groupcoord.security.principal import parse_mapping_rules
from groupcoord.security.tls import TlsFiles
from groupcoord.server.versions import ApiKey
from tests.security.conftest import PASSWORD, USER, SaslListener


def _server_tls(certificates: Certificates, *, trusted: bool = False) -> TlsFiles:
    return TlsFiles(certificate=str(certificates.server_cert), key=str(certificates.server_key),
                    trusted=str(certificates.ca) if trusted else None)


def _consumer(listener: SaslListener, certificates: Certificates, protocol: str, **options: object) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=f"localhost:{listener.running.address.port}", security_protocol=protocol,
                         ssl_cafile=str(certificates.ca), request_timeout_ms=5000, **options)


def _metadata_principals(listener: SaslListener) -> set[str]:
    return {principal for key, principal in listener.recording.seen if key == ApiKey.METADATA}


def test_ssl_without_a_client_certificate_is_anonymous(
        sasl_listener: Callable[..., SaslListener], certificates: Certificates) -> None:
    listener = sasl_listener(protocol="SSL", tls=_server_tls(certificates))
    consumer = _consumer(listener, certificates, "SSL")
    try:
        assert consumer.topics() == {"t1"}
    finally:
        consumer.close()
    assert _metadata_principals(listener) == {"User:ANONYMOUS"}


def test_sasl_ssl_authenticates_with_scram(
        sasl_listener: Callable[..., SaslListener], certificates: Certificates) -> None:
    listener = sasl_listener(protocol="SASL_SSL", tls=_server_tls(certificates))
    consumer = _consumer(listener, certificates, "SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                         sasl_plain_username=USER, sasl_plain_password=PASSWORD)
    try:
        assert consumer.topics() == {"t1"}
    finally:
        consumer.close()
    assert _metadata_principals(listener) == {f"User:{USER}"}


@pytest.mark.parametrize(("rules", "principal"), [
    ("DEFAULT", f"User:{CLIENT_DN}"),
    ("RULE:^CN=([a-z]+)-([0-9]+),OU=eng,.*$/$1$2/U,DEFAULT", "User:CLIENT1"),
    ("RULE:^CN=(.*?),OU=sales,.*$/$1/,RULE:^CN=(.*?),.*$/$1/", "User:client-1"),
])
def test_mutual_tls_principal_comes_from_the_certificate(
        sasl_listener: Callable[..., SaslListener], certificates: Certificates, rules: str, principal: str) -> None:
    listener = sasl_listener(protocol="SSL", tls=_server_tls(certificates, trusted=True), client_auth="required",
                             mapping_rules=parse_mapping_rules(rules))
    consumer = _consumer(listener, certificates, "SSL", ssl_certfile=str(certificates.client_cert),
                         ssl_keyfile=str(certificates.client_key))
    try:
        assert consumer.topics() == {"t1"}
    finally:
        consumer.close()
    assert _metadata_principals(listener) == {principal}


def test_required_client_certificate_refuses_a_client_without_one(
        sasl_listener: Callable[..., SaslListener], certificates: Certificates) -> None:
    listener = sasl_listener(protocol="SSL", tls=_server_tls(certificates, trusted=True), client_auth="required")
    security = ClientSecurity(protocol="SSL", tls=TlsFiles(trusted=str(certificates.ca)))
    connection = BrokerConnection("localhost", listener.running.address.port, client_id="t", timeout_ms=3000,
                                  security=security)
    with pytest.raises(ConnectionLostError):
        connection.connect()
    assert listener.recording.seen == []


def test_groupcoord_client_checks_the_host_name(
        sasl_listener: Callable[..., SaslListener], certificates: Certificates) -> None:
    wrong = TlsFiles(certificate=str(certificates.wrong_host_cert), key=str(certificates.wrong_host_key))
    listener = sasl_listener(protocol="SASL_SSL", tls=wrong)
    security = ClientSecurity(protocol="SASL_SSL", mechanism="SCRAM-SHA-256", username=USER, password=PASSWORD,
                              tls=TlsFiles(trusted=str(certificates.ca)))
    connection = BrokerConnection("localhost", listener.running.address.port, client_id="t", timeout_ms=3000,
                                  security=security)
    with pytest.raises(ConnectionLostError, match=r"[Hh]ostname mismatch|doesn't match|not valid for"):
        connection.connect()
    unchecked = BrokerConnection("localhost", listener.running.address.port, client_id="t", timeout_ms=3000,
                                 security=replace(security, check_hostname=False))
    unchecked.connect()  # the same certificate passes once verification is turned off: the name was the problem
    unchecked.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_groupcoord_client_authenticates_over_sasl_ssl(
        sasl_listener: Callable[..., SaslListener], certificates: Certificates, mechanism: str) -> None:
    listener = sasl_listener(protocol="SASL_SSL", tls=_server_tls(certificates))
    good = ClientSecurity(protocol="SASL_SSL", mechanism=mechanism, username=USER, password=PASSWORD,
                          tls=TlsFiles(trusted=str(certificates.ca)))
    connection = BrokerConnection("localhost", listener.running.address.port, client_id="t", timeout_ms=3000,
                                  security=good)
    connection.connect()
    connection.close()
    bad = BrokerConnection("localhost", listener.running.address.port, client_id="t", timeout_ms=3000,
                           security=replace(good, password="wrong"))
    with pytest.raises(ConnectionLostError, match=f"authentication as {USER} with {mechanism}"):
        bad.connect()
