"""Objects of an object-store location, through ``obstore`` (object_store's Python binding, the crate delta-rs uses).

The few operations the state root and the append path need on object storage: read, write, put-if-absent (the
one atomic step of a commit: ``If-None-Match: *``), existence, and listing the names under a prefix. Paths are
relative to a :class:`~groupcoord.storage.location.TableLocation`. One client per bucket and options is kept for
the process (a client holds its connection pool).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import obstore
from obstore.exceptions import AlreadyExistsError, NotFoundError, PreconditionError
from obstore.store import S3Store

from groupcoord.storage.location import RETRY_KEYS, TableLocation

if TYPE_CHECKING:
    from obstore.store import ClientConfig, RetryConfig, S3Config

__all__ = ["delete", "exists", "holds_delta_log", "list_names", "put", "put_if_absent", "read"]

_CLIENT_KEYS = ("allow_http",)
"""Storage options that configure the HTTP client rather than S3 itself."""


def read(location: TableLocation, relative: str) -> bytes | None:
    """The bytes of ``relative`` under ``location``, or ``None`` when there is no such object."""
    store, key = _store_and_key(location, relative)
    try:
        return bytes(obstore.get(store, key).bytes())
    except (NotFoundError, FileNotFoundError):
        return None


def exists(location: TableLocation, relative: str) -> bool:
    """True if the object ``relative`` exists under ``location``."""
    store, key = _store_and_key(location, relative)
    try:
        obstore.head(store, key)
    except (NotFoundError, FileNotFoundError):
        return False
    return True


def put(location: TableLocation, relative: str, data: bytes) -> None:
    """Write ``data`` as ``relative`` under ``location``, replacing any object there."""
    store, key = _store_and_key(location, relative)
    obstore.put(store, key, data)


def delete(location: TableLocation, relative: str) -> None:
    """Delete the object ``relative`` under ``location`` (nothing happens when there is none)."""
    store, key = _store_and_key(location, relative)
    with contextlib.suppress(NotFoundError, FileNotFoundError):
        obstore.delete(store, key)


def put_if_absent(location: TableLocation, relative: str, data: bytes) -> bool:
    """Create ``relative`` under ``location`` with ``data`` unless it exists: ``True`` if this call created it.

    The server decides atomically (``If-None-Match: *``). ``False`` also comes back when an earlier attempt of this
    very call created the object but its response was lost (the client's retry then finds it): the caller tells
    the two apart by reading the object back.
    """
    store, key = _store_and_key(location, relative)
    try:
        obstore.put(store, key, data, mode="create")
    except (AlreadyExistsError, PreconditionError):
        return False
    return True


def list_names(location: TableLocation, *, limit: int | None = None) -> list[str]:
    """The names directly under ``location`` (objects and common prefixes, without the prefix), up to ``limit``."""
    store, key = _store_and_key(location, "")
    listing = obstore.list_with_delimiter(store, key or None)
    names = [entry.rstrip("/").rpartition("/")[2] for entry in listing["common_prefixes"]]
    names += [entry["path"].rpartition("/")[2] for entry in listing["objects"]]
    return names[:limit] if limit is not None else names


def holds_delta_log(location: TableLocation) -> bool:
    """True if ``location`` holds a Delta table: a commit, a checkpoint or ``_last_checkpoint`` in its
    ``_delta_log/``.

    delta-rs's ``DeltaTable.is_deltatable`` answers the same but keeps the GIL through its requests and their
    retries (up to the retry timeout while the storage is down), which stalls every other thread of the process;
    obstore's listing releases it.
    """
    store, key = _store_and_key(location, "_delta_log/")
    for chunk in obstore.list(store, key + "/", chunk_size=100):
        if any(_LOG_ENTRY.match(entry["path"].rpartition("/")[2]) for entry in chunk):
            return True
    return False


_LOG_ENTRY = re.compile(r"^(\d{20}\.(json|checkpoint(\.\d+\.\d+)?\.parquet)|_last_checkpoint)$")
"""A name in ``_delta_log/`` that makes a table: a commit, a (multi-part) checkpoint, the checkpoint pointer."""


def _store_and_key(location: TableLocation, relative: str) -> tuple[S3Store, str]:
    bucket, prefix = location.bucket_and_key
    key = "/".join(part for part in (prefix, relative.strip("/")) if part)
    return _store(bucket, tuple(sorted(location.options.items()))), key


@functools.lru_cache(maxsize=16)
def _store(bucket: str, options: tuple[tuple[str, str], ...]) -> S3Store:
    found = dict(options)
    config, client = _split_options({k: v for k, v in found.items() if k not in RETRY_KEYS})
    return S3Store(bucket, config=config, client_options=client, retry_config=_retry_config(found))


def _split_options(options: Mapping[str, str]) -> tuple[S3Config, ClientConfig]:
    """delta-rs style options (``aws_region``, ``aws_allow_http``) as obstore's S3 and HTTP client settings."""
    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    for name, value in options.items():
        short = name.lower().removeprefix("aws_")
        if short in _CLIENT_KEYS:
            client[short] = value.lower() == "true"
        else:
            config[short] = value
    # obstore's config types are TypedDicts that exist at type-check time only
    return cast("S3Config", config), cast("ClientConfig", client)


def _retry_config(options: Mapping[str, str]) -> RetryConfig | None:
    """The retry settings among the options (:func:`groupcoord.storage.location.retry_options`) as obstore's."""
    if "retry_timeout" not in options:
        return None
    return cast("RetryConfig", {
        "max_retries": int(options["max_retries"]),
        "retry_timeout": _duration(options["retry_timeout"]),
        "backoff": {"init_backoff": _duration(options["backoff_config.init_backoff"]),
                    "max_backoff": _duration(options["backoff_config.max_backoff"]),
                    "base": float(options["backoff_config.base"])},
    })


def _duration(value: str) -> datetime.timedelta:
    """``"250ms"`` as a duration (the form :func:`~groupcoord.storage.location.retry_options` writes)."""
    return datetime.timedelta(milliseconds=int(value.removesuffix("ms")))
