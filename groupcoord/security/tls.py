"""TLS contexts from PEM files, and the distinguished name of a peer certificate as Kafka writes it.

The server context loads its certificate chain and key (``ssl.keystore.location``, ``ssl.key.location``) and, for
mutual TLS, the CAs it trusts for client certificates (``ssl.truststore.location``). The client context verifies
the server against the trust store and checks its host name, as Kafka's Java clients do by default
(``ssl.endpoint.identification.algorithm=https``).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any, Literal

ClientAuth = Literal["none", "requested", "required"]

_SHORT_NAMES = {
    "commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O", "localityName": "L",
    "stateOrProvinceName": "ST", "countryName": "C", "domainComponent": "DC", "userId": "UID",
    "streetAddress": "STREET",
}


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: a certificate chain, its private key (may be inside the chain file) with an optional password,
    and a CA bundle to trust."""

    certificate: str | None = None
    key: str | None = None
    key_password: str | None = None
    trusted: str | None = None


class TlsConfigError(ValueError):
    """The TLS files do not make a usable context (missing, unreadable, or not matching)."""


def server_context(files: TlsFiles, client_auth: ClientAuth = "none") -> ssl.SSLContext:
    """The listener's context: TLS 1.2 or newer, its certificate, and client certificates as ``client_auth`` says."""
    if files.certificate is None:
        raise TlsConfigError("an SSL or SASL_SSL listener needs spark.groupcoord.ssl.keystore.location (a PEM "
                             "certificate chain)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_chain(context, files)
    if client_auth != "none":
        if files.trusted is None:
            raise TlsConfigError("ssl.client.auth needs spark.groupcoord.ssl.truststore.location (PEM CAs that "
                                 "sign client certificates)")
        _load_trusted(context, files.trusted)
        context.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    return context


def client_context(files: TlsFiles, *, check_hostname: bool = True) -> ssl.SSLContext:
    """A client's context: verify the server against ``files.trusted`` (the system's CAs when unset) and its host
    name; present ``files.certificate`` for mutual TLS."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    if files.trusted is not None:
        _load_trusted(context, files.trusted)
    else:
        context.load_default_certs()
    if files.certificate is not None:
        _load_chain(context, files)
    return context


def _load_chain(context: ssl.SSLContext, files: TlsFiles) -> None:
    assert files.certificate is not None
    try:
        context.load_cert_chain(files.certificate, files.key, files.key_password)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"cannot load the certificate chain {files.certificate} (key "
                             f"{files.key or 'in the same file'}): {exc}") from None


def _load_trusted(context: ssl.SSLContext, path: str) -> None:
    try:
        context.load_verify_locations(cafile=path)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"cannot load the trust store {path}: {exc}") from None


def distinguished_name(certificate: dict[str, Any]) -> str:
    """The subject of a peer certificate (``SSLSocket.getpeercert()``) as RFC 2253 writes it, the form Kafka's
    principal mapping rules match: most specific first, ``CN=client,OU=eng,O=example,C=US``."""
    parts = []
    for rdn in reversed(certificate.get("subject", ())):
        parts.append("+".join(f"{_SHORT_NAMES.get(name, name)}={_escape(value)}" for name, value in rdn))
    return ",".join(parts)


def _escape(value: str) -> str:
    escaped = "".join(f"\\{c}" if c in ',+"\\<>;' else c for c in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    return escaped[:-1] + "\\ " if escaped.endswith(" ") and len(escaped) > 1 else escaped
