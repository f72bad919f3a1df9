"""A SASL listener with real sockets: kafka-python authenticates with each mechanism; wrong credentials, an unknown
mechanism and any request before authentication close the connection, as Kafka's; nothing of an unauthenticated
connection reaches an adapter but ApiVersions."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kafka import KafkaConsumer
from kafka.protocol.metadata import MetadataRequest

from groupcoord.protocol.errors import Errors
from groupcoord.server.versions import ApiKey
from tests.security.conftest import ALL_MECHANISMS, PASSWORD, USER, SaslListener, SaslRawClient, plain_token
from tests.server.conftest import RunningEndpoint

SaslClientFactory = Callable[[RunningEndpoint], SaslRawClient]


@pytest.mark.parametrize("mechanism", ALL_MECHANISMS)
def test_kafka_python_authenticates_and_requests_carry_the_principal(
        sasl_listener: Callable[..., SaslListener], mechanism: str) -> None:
    listener = sasl_listener()
    consumer = KafkaConsumer(bootstrap_servers=listener.running.bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=PASSWORD,
                             request_timeout_ms=5000)
    try:
        assert consumer.topics() == {"t1"}
    finally:
        consumer.close()
    principals = {principal for key, principal in listener.recording.seen if key == ApiKey.METADATA}
    assert principals == {f"User:{USER}"}
    assert listener.running.endpoint.authentication.successes[mechanism] >= 1
    assert listener.running.endpoint.authentication.failed == 0


def _handshake(client: SaslRawClient, mechanism: str) -> None:
    assert client.call(ApiKey.API_VERSIONS, 3, {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"})
    answer = client.call(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": mechanism})
    assert answer is not None and answer["ErrorCode"] == 0 and mechanism in answer["Mechanisms"]


@pytest.mark.parametrize(("user", "password"), [(USER, "wrong"), ("mallory", PASSWORD)])
def test_wrong_credentials_answer_58_after_the_delay_then_close(
        sasl_listener: Callable[..., SaslListener], sasl_client: SaslClientFactory, user: str, password: str) -> None:
    listener = sasl_listener(delay_ms=300)
    client = sasl_client(listener.running)
    _handshake(client, "PLAIN")
    answer, seconds = client.timed_call(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": plain_token(user, password)})
    assert answer is not None and answer["ErrorCode"] == Errors.SASL_AUTHENTICATION_FAILED.code == 58
    assert answer["ErrorMessage"] == "Authentication failed: Invalid username or password"  # Kafka's PlainSaslServer
    assert seconds >= 0.29
    assert client.closed_by_server()
    assert listener.running.endpoint.authentication.failures["PLAIN"] == 1
    assert {key for key, _ in listener.recording.seen} == {ApiKey.API_VERSIONS}


def test_unknown_scram_user_gets_the_same_message_as_a_wrong_password(
        sasl_listener: Callable[..., SaslListener], sasl_client: SaslClientFactory) -> None:
    listener = sasl_listener(delay_ms=0)
    client = sasl_client(listener.running)
    _handshake(client, "SCRAM-SHA-256")
    answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": b"n,,n=mallory,r=abcdefgh"})
    assert answer is not None and answer["ErrorCode"] == 58
    assert answer["ErrorMessage"] == ("Authentication failed during authentication due to invalid credentials with "
                                      "SASL mechanism SCRAM-SHA-256")
    assert client.closed_by_server()


def test_an_unsupported_mechanism_is_refused_with_the_enabled_ones(
        sasl_listener: Callable[..., SaslListener], sasl_client: SaslClientFactory) -> None:
    listener = sasl_listener(mechanisms=("SCRAM-SHA-512",), delay_ms=0)
    client = sasl_client(listener.running)
    answer = client.call(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
    assert answer == {"ErrorCode": Errors.UNSUPPORTED_SASL_MECHANISM.code, "Mechanisms": ["SCRAM-SHA-512"]}
    assert client.closed_by_server()


@pytest.mark.parametrize("after_handshake", [False, True])
def test_requests_before_authentication_close_the_connection_and_reach_nothing(
        sasl_listener: Callable[..., SaslListener], sasl_client: SaslClientFactory, after_handshake: bool) -> None:
    listener = sasl_listener(delay_ms=0)
    client = sasl_client(listener.running)
    if after_handshake:
        _handshake(client, "PLAIN")
    client.send_raw(client.encode(MetadataRequest[4](topics=None, allow_auto_topic_creation=False)))
    assert client.read_frame() is None
    assert all(key == ApiKey.API_VERSIONS for key, _ in listener.recording.seen)
    assert listener.running.endpoint.authentication.failures["none"] == 1


def test_handshake_v0_exchanges_bare_tokens(
        sasl_listener: Callable[..., SaslListener], sasl_client: SaslClientFactory) -> None:
    listener = sasl_listener()
    client = sasl_client(listener.running)
    assert client.call(ApiKey.SASL_HANDSHAKE, 0, {"Mechanism": "PLAIN"}) == {
        "ErrorCode": 0, "Mechanisms": list(ALL_MECHANISMS)}
    token = plain_token(USER, PASSWORD)
    client.send_raw(len(token).to_bytes(4, "big") + token)
    assert client.read_frame() == b""  # PLAIN's empty answer, size-prefixed
    metadata = client.request(MetadataRequest[4](topics=None, allow_auto_topic_creation=False))
    assert [t[1] for t in metadata.topics] == ["t1"]
    assert listener.recording.seen == [(ApiKey.METADATA, f"User:{USER}")]


def test_sasl_requests_after_authentication_are_an_illegal_state(
        sasl_listener: Callable[..., SaslListener], sasl_client: SaslClientFactory) -> None:
    listener = sasl_listener()
    client = sasl_client(listener.running)
    _handshake(client, "PLAIN")
    assert client.call(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": plain_token(USER, PASSWORD)}) == {
        "ErrorCode": 0, "ErrorMessage": "", "AuthBytes": b"", "SessionLifetimeMs": 0}
    answer = client.call(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
    assert answer is not None and answer["ErrorCode"] == Errors.ILLEGAL_SASL_STATE.code


def test_a_plaintext_listener_gives_every_request_the_anonymous_principal(
        sasl_listener: Callable[..., SaslListener], sasl_client: SaslClientFactory) -> None:
    listener = sasl_listener(protocol="PLAINTEXT")
    client = sasl_client(listener.running)
    client.request(MetadataRequest[4](topics=None, allow_auto_topic_creation=False))
    answer = client.call(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
    assert answer is not None and answer["ErrorCode"] == Errors.ILLEGAL_SASL_STATE.code
    assert listener.recording.seen[0] == (ApiKey.METADATA, "User:ANONYMOUS")
