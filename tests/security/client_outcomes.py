"""What each real client observes when it connects to a secured listener: ``ok`` (it read the cluster's metadata)
or the error it reports, named as the client names it, so two targets can be compared outcome for outcome."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError as LibrdkafkaError
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

TIMEOUT_S = 4.0


@dataclass(frozen=True)
class Attempt:
    """One connection attempt: where, how, and as whom (``user is None``: no SASL credentials at all, the client
    connecting with the listener's protocol stripped of SASL)."""

    bootstrap: str
    protocol: str
    mechanism: str
    user: str | None
    password: str
    ca_file: str


def _without_sasl(protocol: str) -> str:
    return {"SASL_PLAINTEXT": "PLAINTEXT", "SASL_SSL": "SSL"}[protocol]


def confluent_outcome(attempt: Attempt) -> str:
    """librdkafka (confluent-kafka's AdminClient): ``ok`` or the first error it reports (``_AUTHENTICATION``...)."""
    errors: list[LibrdkafkaError] = []
    conf: dict[str, Any] = {"bootstrap.servers": attempt.bootstrap, "ssl.ca.location": attempt.ca_file,
                               "error_cb": errors.append, "socket.timeout.ms": int(TIMEOUT_S * 1000)}
    if attempt.user is None:
        conf["security.protocol"] = _without_sasl(attempt.protocol)
    else:
        conf.update({"security.protocol": attempt.protocol, "sasl.mechanism": attempt.mechanism,
                     "sasl.username": attempt.user, "sasl.password": attempt.password})
    try:
        AdminClient(conf).list_topics(timeout=TIMEOUT_S)
    except KafkaException as exc:
        first = errors[0] if errors else exc.args[0]
        return f"librdkafka {first.name()}"
    return "ok"


def kafka_python_outcome(attempt: Attempt) -> str:
    """kafka-python's consumer: ``ok`` or the exception class it raises."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    options: dict[str, object] = {"bootstrap_servers": attempt.bootstrap, "ssl_cafile": attempt.ca_file,
                                  "request_timeout_ms": int(TIMEOUT_S * 1000),
                                  "bootstrap_timeout_ms": int(TIMEOUT_S * 1000)}
    if attempt.user is None:
        options["security_protocol"] = _without_sasl(attempt.protocol)
    else:
        options.update(security_protocol=attempt.protocol, sasl_mechanism=attempt.mechanism,
                       sasl_plain_username=attempt.user, sasl_plain_password=attempt.password)
    try:
        consumer = KafkaConsumer(**options)
        try:
            consumer.topics()
        finally:
            consumer.close()
    except KafkaError as exc:
        return f"kafka-python {type(exc).__name__}"
    return "ok"


def aiokafka_outcome(attempt: Attempt) -> str:
    """aiokafka's admin client: ``ok`` or the exception class it raises."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError
    from aiokafka.helpers import create_ssl_context

    async def run() -> str:
        options: dict[str, object] = {"bootstrap_servers": attempt.bootstrap,
                                      "request_timeout_ms": int(TIMEOUT_S * 1000)}
        if attempt.protocol == "SASL_SSL":
            options["ssl_context"] = create_ssl_context(cafile=attempt.ca_file)
        if attempt.user is None:
            options["security_protocol"] = _without_sasl(attempt.protocol)
        else:
            options.update(security_protocol=attempt.protocol, sasl_mechanism=attempt.mechanism,
                           sasl_plain_username=attempt.user, sasl_plain_password=attempt.password)
        admin = AIOKafkaAdminClient(**options)
        try:
            await asyncio.wait_for(admin.start(), TIMEOUT_S * 2)
            await asyncio.wait_for(admin.list_topics(), TIMEOUT_S * 2)
        except (KafkaError, TimeoutError) as exc:
            return f"aiokafka {type(exc).__name__}"
        finally:
            await admin.close()
        return "ok"

    return asyncio.run(run())


NODE_DIR = Path(__file__).resolve().parents[1] / "clients" / "node"
JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "SaslOutcome.java"
JAVA_BUILD = Path(__file__).resolve().parents[2] / "var" / "security-java"


def _process_outcome(command: list[str], attempt: Attempt, cwd: Path | None = None) -> str:
    """Run a client program: the password on stdin, its one line of outcome on stdout."""
    done = subprocess.run(command, input=attempt.password + "\n", capture_output=True, text=True, cwd=cwd,
                          timeout=60, check=False)
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}: {done.stderr.strip()[-200:]}"


def _program_arguments(attempt: Attempt) -> list[str]:
    protocol = attempt.protocol if attempt.user is not None else _without_sasl(attempt.protocol)
    return [attempt.bootstrap, protocol, attempt.mechanism, attempt.user or "", attempt.ca_file]


def kafkajs_outcome(attempt: Attempt) -> str:
    """kafkajs's admin client (``tests/clients/node/sasl_outcome.js``): ``ok`` or the error's name."""
    return _process_outcome(["node", "sasl_outcome.js", *_program_arguments(attempt)], attempt, cwd=NODE_DIR)


def java_outcome(attempt: Attempt) -> str:
    """Kafka's Java admin client (``tests/security/java/SaslOutcome.java``): ``ok`` or the cause's class."""
    from groupcoord.devbroker import TEST_JVM_OPTIONS
    from groupcoord.devbroker.java_build import java_command

    command = java_command(JAVA_SOURCE, JAVA_BUILD, *_program_arguments(attempt),
                           jvm_options=(*TEST_JVM_OPTIONS, "-Dorg.apache.logging.log4j.level=OFF"))
    return _process_outcome(command, attempt)


CLIENTS: dict[str, Callable[[Attempt], str]] = {
    "kafka-python": kafka_python_outcome,
    "confluent-kafka": confluent_outcome,
    "aiokafka": aiokafka_outcome,
    "kafkajs": kafkajs_outcome,
    "java": java_outcome,
}
"""Each Python client by name."""
