"""The security settings of a listener and of groupcoord's own clients, read from ``spark.groupcoord.*`` keys.

Secrets (a SASL password, a private key's password) never come from a key's value: they are read from the file a
``*.file`` key names, or else from an environment variable (``GROUPCOORD_SASL_PASSWORD``,
``GROUPCOORD_SSL_KEY_PASSWORD``), and they never appear in a ``repr``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from groupcoord.config.binding import KeyedConfig, from_key, split_list
from groupcoord.config.keys import SECURITY_SECRETS
from groupcoord.config.resolve import Config, resolve_config
from groupcoord.security.principal import MappingRule, parse_mapping_rules
from groupcoord.security.tls import ClientAuth, TlsFiles

CLIENT_SECURITY_KEYS = ("listener.security.protocol", "sasl.mechanism", "sasl.username", "sasl.password.file",
                        "ssl.keystore.location", "ssl.key.location", "ssl.key.password.file",
                        "ssl.truststore.location", "ssl.endpoint.identification.algorithm")
"""The keys :meth:`ClientSecurity.from_config` reads (names and file paths only: never a secret's value)."""

SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})


class SecretMissingError(ValueError):
    """A secret the configuration needs is neither in its file nor in its environment variable."""


def read_secret(config: Config, key: str) -> str | None:
    """The secret ``key`` (``sasl.password``): the first line of the file ``<key>.file`` names, else the
    environment variable :data:`~groupcoord.config.keys.SECURITY_SECRETS` gives, else ``None``."""
    path = config[f"{key}.file"]
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").splitlines()[0] if Path(path).stat().st_size else ""
        except OSError as exc:
            raise SecretMissingError(f"cannot read spark.groupcoord.{key}.file {path}: {exc.strerror}") from None
    return os.environ.get(SECURITY_SECRETS[key])


class SecurityProtocol:
    """What a ``protocol`` (Kafka's security protocol name) implies."""

    protocol: str

    @property
    def sasl(self) -> bool:
        """Whether connections authenticate with SASL first."""
        return self.protocol in SASL_PROTOCOLS

    @property
    def uses_tls(self) -> bool:
        """Whether connections are TLS."""
        return self.protocol in TLS_PROTOCOLS


def _upper_list(value: str) -> tuple[str, ...]:
    return tuple(name.upper() for name in split_list(value) if name)


@dataclass(frozen=True, kw_only=True)
class ListenerSecurity(SecurityProtocol, KeyedConfig):
    """How the endpoint authenticates connections."""

    protocol: str = field(default="PLAINTEXT", metadata=from_key("listener.security.protocol"))
    mechanisms: tuple[str, ...] = field(default=("SCRAM-SHA-256", "SCRAM-SHA-512"),
                                        metadata=from_key("sasl.enabled.mechanisms", convert=_upper_list))
    failed_authentication_delay_ms: int = field(
        default=100, metadata=from_key("connection.failed.authentication.delay.ms"))
    client_auth: ClientAuth = field(default="none", metadata=from_key("ssl.client.auth"))
    mapping_rules: tuple[MappingRule, ...] = field(
        default=(MappingRule(),), metadata=from_key("ssl.principal.mapping.rules", convert=parse_mapping_rules))
    tls: TlsFiles = field(default_factory=TlsFiles)

    @classmethod
    def from_config(cls, config: Config | None = None) -> ListenerSecurity:
        """Every setting from ``config``, the TLS files and the key's password included."""
        resolved = config if config is not None else resolve_config()
        base = super().from_config(resolved)
        return replace(base, tls=tls_files(resolved))



def tls_files(config: Config) -> TlsFiles:
    """The PEM files (and the key's password) named by ``ssl.*`` keys."""
    return TlsFiles(certificate=config["ssl.keystore.location"], key=config["ssl.key.location"],
                    key_password=read_secret(config, "ssl.key.password"),
                    trusted=config["ssl.truststore.location"])


@dataclass(frozen=True)
class ClientSecurity(SecurityProtocol):
    """How groupcoord's own clients connect: the listener's protocol, their SASL user and their TLS files."""

    protocol: str = "PLAINTEXT"
    mechanism: str = "SCRAM-SHA-512"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: TlsFiles = field(default_factory=TlsFiles, repr=False)
    check_hostname: bool = True

    @classmethod
    def from_config(cls, config: Config | None = None) -> ClientSecurity:
        """Read from ``config``; a SASL protocol without a user or password is a :class:`SecretMissingError`."""
        resolved = config if config is not None else resolve_config()
        protocol = resolved["listener.security.protocol"]
        security = cls(protocol=protocol, mechanism=resolved["sasl.mechanism"], username=resolved["sasl.username"],
                       password=read_secret(resolved, "sasl.password") if protocol in SASL_PROTOCOLS else None,
                       tls=tls_files(resolved),
                       check_hostname=resolved["ssl.endpoint.identification.algorithm"] == "https")
        if protocol in SASL_PROTOCOLS and (not security.username or security.password is None):
            raise SecretMissingError(
                f"listener.security.protocol={protocol} needs spark.groupcoord.sasl.username and a password: name "
                "a file with spark.groupcoord.sasl.password.file or set GROUPCOORD_SASL_PASSWORD")
        return security

