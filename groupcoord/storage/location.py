"""Where a table lives: a local directory, or an ``s3://`` URI with the storage options that reach it.

A :class:`TableLocation` is what every table of a state root is opened with. Local locations keep the constant-time
file paths of :mod:`groupcoord.storage.files`; object-store locations go through delta-rs (with
:meth:`TableLocation.delta_options`) and through :mod:`groupcoord.storage.objects`.

Only schemes whose commits are conditional are accepted: a local path (``file://`` or none) and S3 (``s3://``, and
Spark's ``s3a://``, which means the same bucket). On S3 every commit is a put-if-absent (``If-None-Match: *``), so
the options always ask for it (``aws_conditional_put=etag``, the setting S3-compatible servers need), and delta-rs's
unsafe-rename mode (``AWS_S3_ALLOW_UNSAFE_RENAME``) is refused: two writers could then both win a version.

Storage options come from ``spark.groupcoord.storage.*`` keys and, where those are unset, from the usual ``AWS_*``
environment variables. They carry a retry policy too (:func:`retry_options`): a request that fails (a connection refused
while the server restarts, a 5xx) is retried with backoff for :data:`RETRY_TIMEOUT_S`, where object_store's own default
(ten retries, with jitter) gave up within 2 to 5 s, shorter than a server's restart; a caller whose deadline is shorter
(the lease's renewal) asks for less (:meth:`TableLocation.with_retry_timeout`). Secret values (the secret access key,
the session token) come only from the environment or from a file named by a key; they are kept out of :func:`repr` and
of every log line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["OBJECT_SCHEMES", "RETRY_KEYS", "RETRY_TIMEOUT_S", "LocationError", "TableLocation", "as_location",
           "parse_location", "retry_options", "s3_options"]

OBJECT_SCHEMES = ("s3", "s3a")
"""URI schemes of object storage a state root may live on (``s3a`` is Spark's name for ``s3``)."""

_URI = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_TRUE = ("1", "true", "yes", "on")

RETRY_TIMEOUT_S = 30.0
"""How long a failed S3 request is retried (with backoff) before the error reaches groupcoord: an S3 server or a
proxy restarting, a network blip. Each read, write and commit is retried alone; a commit retried after its response
was lost finds its own object and is recognised (:mod:`groupcoord.storage.object_files`)."""
RETRY_INITIAL_BACKOFF_MS = 100
RETRY_MAX_BACKOFF_MS = 1000
"""Backoff between retries: from 100 ms, doubling (with jitter), to at most 1 s, so that requests flow again within
about a second of the server's return."""
RETRY_KEYS = ("max_retries", "retry_timeout", "backoff_config.init_backoff", "backoff_config.max_backoff",
              "backoff_config.base")
"""object_store's retry settings among the storage options (delta-rs reads them from ``storage_options``; obstore
takes them as its ``retry_config``)."""


class LocationError(ValueError):
    """The location or its storage settings are not usable; the message is one line meant for a user."""


@dataclass(frozen=True)
class TableLocation:
    """A local directory (``uri`` is its absolute path) or an object-store prefix (``uri`` is ``s3://bucket/key``).

    ``options`` are the storage options (endpoint, region, credentials) that reach an object store; they hold
    secrets, so they take no part in :func:`repr`, equality or hashing, and never leave the process. ``settings``
    are the ``storage.*`` configuration values the location was parsed with (endpoint, region, access key id,
    the names of the secret files: never a secret): what another process (an executor) needs, with its own
    environment, to open the same location (:meth:`spec`).
    """

    uri: str
    options: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    settings: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_local(self) -> bool:
        """True for a directory of the local filesystem."""
        return _URI.match(self.uri) is None

    @property
    def local_path(self) -> Path:
        """The directory of a local location; a :class:`LocationError` for an object-store one."""
        if not self.is_local:
            raise LocationError(f"{self.uri} is on object storage, not a local directory")
        return Path(self.uri)

    @property
    def name(self) -> str:
        """The last component of the location."""
        return self.uri.rstrip("/").rpartition("/")[2]

    def __truediv__(self, child: str) -> TableLocation:
        if self.is_local:
            return TableLocation(str(Path(self.uri) / child), self.options, self.settings)
        return TableLocation(f"{self.uri.rstrip('/')}/{child.strip('/')}", self.options, self.settings)

    def spec(self) -> tuple[str, dict[str, str]]:
        """``(uri, settings)``: the picklable, secret-free description another process opens the location from
        (``parse_location(uri, settings=settings)`` there, with that process's own credentials)."""
        return self.uri, dict(self.settings)

    def __str__(self) -> str:
        return self.uri

    def with_retry_timeout(self, seconds: float) -> TableLocation:
        """This location with requests retried for ``seconds`` at most (:func:`retry_options`); a local one as is."""
        if self.is_local:
            return self
        return TableLocation(self.uri, {**self.options, **retry_options(seconds)}, self.settings)

    def delta_options(self) -> dict[str, str] | None:
        """The ``storage_options`` argument of delta-rs calls for this location (``None`` when local)."""
        return None if self.is_local else dict(self.options)

    @property
    def spark_uri(self) -> str:
        """The location as Spark and Hadoop name it: a local directory as it is, an S3 location as ``s3a://``
        (Hadoop's S3A filesystem; Spark has no ``s3://`` filesystem of its own)."""
        return self.uri if self.is_local else "s3a://" + self.uri.removeprefix("s3://")

    @property
    def bucket_and_key(self) -> tuple[str, str]:
        """An object-store location's bucket and key prefix (without a trailing ``/``)."""
        parts = urlsplit(self.uri)
        return parts.netloc, parts.path.strip("/")


def as_location(location: str | Path | TableLocation) -> TableLocation:
    """``location`` as a :class:`TableLocation`: kept as it is, or parsed (options from the environment only)."""
    return location if isinstance(location, TableLocation) else parse_location(location)


def parse_location(location: str | Path, *, settings: Mapping[str, Any] | None = None,
                   environ: Mapping[str, str] | None = None) -> TableLocation:
    """Parse a user's path or URI: a local path (or ``file://``) becomes an absolute directory; ``s3://`` and
    ``s3a://`` become an S3 location with :func:`s3_options`. Other schemes (``gs://``, ``az://``, ...) are refused
    with :class:`LocationError`. ``settings`` are ``storage.*`` configuration values by short key name."""
    text = str(location)
    match = _URI.match(text)
    if match is None or text.startswith("file://"):
        return TableLocation(str(Path(text.removeprefix("file://")).expanduser().absolute()))
    scheme = match.group(1).lower()
    if scheme not in OBJECT_SCHEMES:
        raise LocationError(f"unsupported storage scheme {scheme}:// in {text!r}: use a local path, s3:// or s3a://")
    parts = urlsplit(text)
    if "@" in parts.netloc:
        raise LocationError(f"{scheme}:// URIs must not carry credentials; set them in the environment "
                            "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or in spark.groupcoord.storage.* keys")
    if not parts.netloc:
        raise LocationError(f"{text!r} names no bucket: expected {scheme}://BUCKET/PREFIX")
    uri = f"s3://{parts.netloc}/{parts.path.strip('/')}".rstrip("/")
    given = {str(key): str(value) for key, value in (settings or {}).items()
             if str(key).startswith("storage.") and value is not None and value != ""}
    return TableLocation(uri, s3_options(settings or {}, os.environ if environ is None else environ), given)


def s3_options(settings: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """Storage options for S3 (understood by delta-rs and by object_store alike).

    Each comes from its ``storage.*`` key if set, else from the environment: ``storage.endpoint`` or
    ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``; ``storage.region`` or ``AWS_REGION``/``AWS_DEFAULT_REGION``;
    ``storage.access.key.id`` or ``AWS_ACCESS_KEY_ID``; the secret access key and session token from the files
    named by ``storage.secret.access.key.file`` and ``storage.session.token.file``, or from
    ``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN``. Commits are always conditional (``aws_conditional_put``);
    ``AWS_S3_ALLOW_UNSAFE_RENAME`` is refused.
    """
    if environ.get("AWS_S3_ALLOW_UNSAFE_RENAME", "").strip().lower() in _TRUE:
        raise LocationError("AWS_S3_ALLOW_UNSAFE_RENAME is set: groupcoord commits only with put-if-absent "
                            "(two writers could both win a version with unsafe renames); unset it")

    def setting(key: str, *variables: str) -> str | None:
        value = settings.get(key)
        if value:
            return str(value)
        return next((environ[v] for v in variables if environ.get(v)), None)

    options = {"aws_conditional_put": "etag", **retry_options(RETRY_TIMEOUT_S)}
    endpoint = setting("storage.endpoint", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    if endpoint:
        options["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            options["aws_allow_http"] = "true"
    options["aws_region"] = setting("storage.region", "AWS_REGION", "AWS_DEFAULT_REGION") or "us-east-1"
    found = {
        "aws_access_key_id": setting("storage.access.key.id", "AWS_ACCESS_KEY_ID"),
        "aws_secret_access_key": _secret(settings, "storage.secret.access.key.file", environ,
                                         "AWS_SECRET_ACCESS_KEY"),
        "aws_session_token": _secret(settings, "storage.session.token.file", environ, "AWS_SESSION_TOKEN"),
    }
    options.update({key: value for key, value in found.items() if value})
    return options


def retry_options(timeout_s: float) -> dict[str, str]:
    """object_store's retry settings (:data:`RETRY_KEYS`): a failed request retried with backoff
    (:data:`RETRY_INITIAL_BACKOFF_MS` doubling to :data:`RETRY_MAX_BACKOFF_MS`) until ``timeout_s`` after it was
    first sent (the retry count does not bound it first)."""
    return {"max_retries": str(max(10, int(timeout_s * 1000 / RETRY_INITIAL_BACKOFF_MS))),
            "retry_timeout": f"{int(timeout_s * 1000)}ms",
            "backoff_config.init_backoff": f"{RETRY_INITIAL_BACKOFF_MS}ms",
            "backoff_config.max_backoff": f"{RETRY_MAX_BACKOFF_MS}ms",
            "backoff_config.base": "2"}


def _secret(settings: Mapping[str, Any], file_key: str, environ: Mapping[str, str], variable: str) -> str | None:
    """A secret from the file named by ``file_key``, else from the environment variable ``variable``."""
    file = settings.get(file_key)
    if not file:
        return environ.get(variable) or None
    try:
        return Path(str(file)).expanduser().read_text(encoding="utf-8").strip() or None
    except OSError as exc:
        raise LocationError(f"cannot read spark.groupcoord.{file_key} {file}: {exc.strerror or exc}") from None
