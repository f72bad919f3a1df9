"""Kafka client settings in the Java client's names (Spark's Kafka source options without ``kafka.``) for
librdkafka, which reads the records of a Kafka source here.

Spark users write ``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config`` and
``kafka.ssl.truststore.location``; librdkafka takes ``sasl.username``/``sasl.password`` and PEM files under other
names. :func:`librdkafka_settings` maps them:

- ``sasl.jaas.config`` with Kafka's ``PlainLoginModule`` or ``ScramLoginModule`` and its ``username`` and
  ``password`` options -> ``sasl.username``, ``sasl.password`` (any other login module is refused: librdkafka has
  no JAAS);
- ``ssl.truststore.location`` (type ``PEM``) -> ``ssl.ca.location``;
- ``ssl.keystore.location`` (type ``PEM``: the private key and the certificate chain in one file, as Kafka's PEM
  key store) -> ``ssl.certificate.location`` and ``ssl.key.location``; ``ssl.key.password`` as it is;
- ``ssl.endpoint.identification.algorithm`` ``https`` stays, empty becomes librdkafka's ``none``;
- JKS and PKCS12 stores, and store passwords (which Kafka refuses with PEM), are refused with the reason.

Every other setting passes as it is (librdkafka shares most names with Java's client).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

_LOGIN_MODULES = ("org.apache.kafka.common.security.plain.PlainLoginModule",
                  "org.apache.kafka.common.security.scram.ScramLoginModule")
_JAAS = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?:required|requisite|sufficient|optional)(?P<options>.*?);?\s*$",
                   re.DOTALL)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')
_STORE_PASSWORDS = ("ssl.keystore.password", "ssl.truststore.password")


class KafkaClientSettingsError(ValueError):
    """A Java client setting that cannot be given to librdkafka; the message says which and why."""


def parse_jaas(config: str) -> tuple[str, str]:
    """The ``username`` and ``password`` of a PLAIN or SCRAM ``sasl.jaas.config``."""
    match = _JAAS.match(config)
    if match is None:
        raise KafkaClientSettingsError("sasl.jaas.config is not a JAAS login module configuration")
    if match["module"] not in _LOGIN_MODULES:
        raise KafkaClientSettingsError(f"sasl.jaas.config: login module {match['module']} is not supported "
                                       "(librdkafka reads PlainLoginModule and ScramLoginModule credentials only)")
    options = {name: bare or re.sub(r"\\(.)", r"\1", quoted)  # a quoted value's escapes undone
               for name, quoted, bare in _JAAS_OPTION.findall(match["options"])}
    if "username" not in options or "password" not in options:
        raise KafkaClientSettingsError("sasl.jaas.config needs username and password options")
    return options["username"], options["password"]


def _pem_only(settings: Mapping[str, str], kind: str) -> None:
    store_type = settings.get(f"ssl.{kind}.type", "PEM").upper()
    if store_type != "PEM":
        raise KafkaClientSettingsError(f"ssl.{kind}.type={store_type} is not supported: librdkafka reads PEM files "
                                       f"(set ssl.{kind}.type=PEM and give a PEM file)")


def librdkafka_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` (Java client names) as librdkafka settings; raises :class:`KafkaClientSettingsError`."""
    mapped: dict[str, str] = {}
    for name, value in settings.items():
        if name in _STORE_PASSWORDS:
            raise KafkaClientSettingsError(f"{name} is not supported: PEM stores have no password (Kafka refuses "
                                           "one too); an encrypted key's password is ssl.key.password")
        if name in ("ssl.truststore.type", "ssl.keystore.type"):
            continue
        if name == "sasl.jaas.config":
            mapped["sasl.username"], mapped["sasl.password"] = parse_jaas(value)
        elif name == "ssl.truststore.location":
            _pem_only(settings, "truststore")
            mapped["ssl.ca.location"] = value
        elif name == "ssl.keystore.location":
            _pem_only(settings, "keystore")
            mapped["ssl.certificate.location"] = mapped["ssl.key.location"] = value
        elif name == "ssl.endpoint.identification.algorithm":
            mapped[name] = value or "none"
        else:
            mapped[name] = value
    return mapped


def read_client_properties(path: str | Path) -> dict[str, str]:
    """A Java properties file of Kafka client settings (as Kafka's tools take with ``--command-config``):
    ``name=value`` lines, ``#`` and ``!`` comments (no line continuations); a :class:`KafkaClientSettingsError`
    when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise KafkaClientSettingsError(f"cannot read the Kafka client settings {path}: {exc.strerror}") from None
    found: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        name, sep, value = stripped.partition("=")
        if not sep or not name.strip():
            raise KafkaClientSettingsError(f"{path}: a line is not name=value")  # never echo it: it may be a secret
        found[name.strip()] = value.strip()
    return found
