"""Certificates for tests and benchmarks, made with the ``openssl`` command (the ``cryptography`` package is not
installed): a CA, a server certificate for ``localhost`` and ``127.0.0.1``, one for another host name, and a client
certificate."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

CLIENT_SUBJECT = "/O=example/OU=eng/CN=client-1"
CLIENT_DN = "CN=client-1,OU=eng,O=example"
"""The client certificate's subject as Kafka's principal mapping sees it (RFC 2253, most specific first)."""


@dataclass(frozen=True)
class Certificates:
    """PEM files: the CA, the server's chain and key, a server certificate for another name, the client's."""

    ca: Path
    server_cert: Path
    server_key: Path
    wrong_host_cert: Path
    wrong_host_key: Path
    client_cert: Path
    client_key: Path


_NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _signed(folder: Path, name: str, subject: str, extensions: str) -> tuple[Path, Path]:
    key, csr, cert, ext = (folder / f"{name}.{suffix}" for suffix in ("key", "csr", "pem", "ext"))
    ext.write_text(extensions)
    _openssl("req", *_NEW_KEY, "-keyout", key.name, "-out", csr.name, "-subj", subject, cwd=folder)
    _openssl("x509", "-req", "-in", csr.name, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
             "-sha256", "-out", cert.name, "-extfile", ext.name, cwd=folder)
    return cert, key


def make_certificates(folder: Path) -> Certificates:
    """Write every file into ``folder`` (a few hundred milliseconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", *_NEW_KEY, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=groupcoord test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    server = "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
    server_cert, server_key = _signed(folder, "server", "/CN=localhost", server)
    wrong_cert, wrong_key = _signed(folder, "wrong", "/CN=elsewhere.example",
                                    "subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth\n")
    client_cert, client_key = _signed(folder, "client", CLIENT_SUBJECT, "extendedKeyUsage=clientAuth\n")
    return Certificates(folder / "ca.pem", server_cert, server_key, wrong_cert, wrong_key, client_cert, client_key)
