"""The Kafka broker configured like a secured ``serve`` (for tests/security and bench/security_cost.py):
SASL_PLAINTEXT and SASL_SSL listeners with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, PEM certificates, and the same
users (PLAIN ones in JAAS, as Kafka keeps them; SCRAM ones created with Kafka's own AlterUserScramCredentials through
the PLAINTEXT listener)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialUpsertion,
)

from bench.secured_certificates import Certificates
from groupcoord.devbroker import TEST_JVM_OPTIONS, KafkaBroker
from groupcoord.devbroker.broker import free_port

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_LOGIN = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
          "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
          "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


@dataclass
class SecuredBroker:
    """A running broker and its secured listeners' bootstrap addresses."""

    broker: KafkaBroker
    sasl_plaintext: str
    sasl_ssl: str

    def bootstrap(self, protocol: str) -> str:
        """The listener of ``protocol``."""
        return self.sasl_ssl if protocol == "SASL_SSL" else self.sasl_plaintext


def _jaas(mechanism: str, users: Mapping[str, str]) -> str:
    entries = "".join(f' user_{name}="{password}"' for name, password in users.items()) \
        if mechanism == "PLAIN" else ""
    return f"{_LOGIN[mechanism]} required{entries};"


def start_secured_broker(log_dir: Path, certificates: Certificates, users: Mapping[str, str], *,
                         client_auth: str = "none", properties: Mapping[str, str] | None = None) -> SecuredBroker:
    """Start the broker with both secured listeners and ``users`` for every mechanism (``properties``: more
    broker settings)."""
    keystore = log_dir / "server-keystore.pem"
    log_dir.mkdir(parents=True, exist_ok=True)
    keystore.write_text(certificates.server_key.read_text() + certificates.server_cert.read_text())
    plain_port, ssl_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    settings: dict[str, str] = {
        **(properties or {}),
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certificates.ca),
        # Kafka asks for client certificates on a SASL_SSL listener only when told so with the listener's prefix.
        "listener.name.sasl_ssl.ssl.client.auth": client_auth,
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        for mechanism in MECHANISMS:
            settings[f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config"] = _jaas(mechanism, users)
    broker = KafkaBroker.start(log_dir, properties=settings, jvm_options=TEST_JVM_OPTIONS,
                               extra_listeners=(f"SASL_PLAINTEXT://127.0.0.1:{plain_port}",
                                                f"SASL_SSL://localhost:{ssl_port}"))
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for scram in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):  # a user once per request
            upserts: list[UserScramCredentialAlteration] = [
                UserScramCredentialUpsertion(name, ScramCredentialInfo(scram, 4096), password.encode())
                for name, password in users.items()]
            for future in admin.alter_user_scram_credentials(upserts).values():
                future.result(30)
    except BaseException:
        broker.stop()
        raise
    return SecuredBroker(broker, f"127.0.0.1:{plain_port}", f"localhost:{ssl_port}")
