"""The options of the ``groupcoord-delta`` sink and the shape of its table, checked when the query starts.

Options (case-insensitive, as Spark passes them):

- ``path``: the Delta table (``writeStream.start(path)`` sets it too); created on first use;
- ``group.id``: the consumer group of the query's ``groupcoord`` source (checked against the source's batches);
- ``checkpointLocation``: the query's checkpoint, where the sink reads which offsets each batch of the source covers;
- ``state.root``: the state root of the group (default: the session's ``spark.groupcoord.state.root``);
- ``commit.attempts``: how many times a commit recomputes after a concurrent commit of the same partitions (5);
- ``storage.*``: the storage settings of the table, the checkpoint and the state root when they are on S3
  (``storage.endpoint``, ``storage.region``, ... ; default: the session's ``spark.groupcoord.storage.*``). They are
  not secret; secrets come from the environment or the files the settings name, on the driver and the executors.

Paths are URIs: a local path (or ``file:``), ``s3://`` or ``s3a://`` (the same bucket; Spark's name for it).

The other ``spark.groupcoord.*`` keys without their prefix are accepted and ignored, so one options map can serve the
source and the sink. Anything else fails the query at start with a message naming it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from groupcoord.config import REGISTRY, ConfigError
from groupcoord.config.keys import STORAGE_SECRETS
from groupcoord.storage.location import LocationError, TableLocation, parse_location

_OWN = ("path", "group.id", "checkpointlocation", "state.root", "commit.attempts")
_SPARKS = ("queryname",)
"""Options Spark itself adds to a stream writer's (``writeStream.queryName(...)``): accepted, not used."""
_REQUIRED_COLUMNS = {"topic": pa.string(), "partition": pa.int32(), "offset": pa.int64()}


class SinkOptionError(ConfigError):
    """A ``groupcoord-delta`` option is missing, unknown or wrong, or the table has the wrong shape."""


@dataclass(frozen=True)
class SinkOptions:
    """The sink's resolved options."""

    path: str
    group_id: str
    checkpoint: str
    state_root: str
    commit_attempts: int = 5
    storage: Mapping[str, str] = field(default_factory=dict)
    """The ``storage.*`` settings (short names; never secret values)."""

    @property
    def table(self) -> TableLocation:
        """The sink's table, with the storage options of this process (credentials from its environment)."""
        return parse_location(self.path, settings=self.storage)

    @property
    def checkpoint_location(self) -> TableLocation:
        """The query's checkpoint, where Spark's offset log is."""
        return parse_location(self.checkpoint, settings=self.storage)

    @staticmethod
    def parse(options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> SinkOptions:
        """Resolve ``options`` over ``defaults`` (short ``spark.groupcoord.*`` names), or raise naming the problem."""
        given = {key.lower(): value for key, value in options.items()}
        known = {key.name.lower() for key in REGISTRY} | set(_OWN) | set(_SPARKS)
        for key in given:
            if key in STORAGE_SECRETS:
                raise SinkOptionError(f"groupcoord-delta: option '{key}' is a secret and is refused as an option "
                                      f"(Spark shows options in its UI and logs): set it in the environment or name "
                                      f"a file with '{key}.file'")
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise SinkOptionError(f"groupcoord-delta: unknown option '{key}'{hint}")
        merged = {**{k.lower(): v for k, v in (defaults or {}).items()}, **given}

        def required(key: str, how: str) -> str:
            value = (merged.get(key) or "").strip()
            if not value:
                raise SinkOptionError(f"groupcoord-delta: the option '{key}' is required ({how})")
            return value

        attempts = merged.get("commit.attempts", "5")
        if not str(attempts).strip().isdigit() or int(attempts) < 1:
            raise SinkOptionError(f"groupcoord-delta: commit.attempts={attempts!r}: expected a positive integer")
        return SinkOptions(
            path=location_text(required("path", "the Delta table: .option('path', ...) or .start(path)"), "path"),
            group_id=required("group.id", "the same group.id as the query's groupcoord source"),
            checkpoint=location_text(required("checkpointlocation", "the query's checkpoint, where the sink reads "
                                                                    "the offsets of each batch"),
                                     "checkpointLocation"),
            state_root=location_text(required("state.root", "or set spark.groupcoord.state.root in the session"),
                                     "state.root"),
            commit_attempts=int(attempts),
            storage={key: str(value) for key, value in merged.items() if key.startswith("storage.") and value},
        )


def location_text(location: str, option: str) -> str:
    """A path or URI as the sink keeps it: a local path from a path or a ``file:`` URI, ``s3://bucket/key`` from
    ``s3://`` or ``s3a://``; other schemes raise :class:`SinkOptionError` naming ``option``."""
    if location.startswith("file:"):
        location = location.removeprefix("file:")
        return str(Path("/" + location.lstrip("/")))
    try:
        where = parse_location(location, settings={}, environ={})
    except LocationError as exc:
        raise SinkOptionError(f"groupcoord-delta: option '{option}': {exc}") from None
    return where.uri if not where.is_local else str(Path(location))


def sink_table_schema(stream: pa.Schema) -> pa.Schema:
    """The table schema of a stream: its columns as they are, with ``topic``, ``partition`` and ``offset`` required."""
    for name, wanted in _REQUIRED_COLUMNS.items():
        if name not in stream.names:
            raise SinkOptionError(f"groupcoord-delta: the stream has no '{name}' column; the sink needs topic "
                                  f"(string), partition (int) and offset (bigint) to write each record once")
        found = stream.field(name).type
        if found != wanted:
            raise SinkOptionError(f"groupcoord-delta: the column '{name}' is {found}, the sink needs {wanted}")
    return stream


def check_table_schema(table: pa.Schema, stream: pa.Schema, path: str) -> None:
    """Refuse an existing table whose columns differ from the stream's (large and view string and binary types
    count as the plain ones: Delta has one string and one binary type)."""
    have = [(f.name, _plain(f.type)) for f in table]
    want = [(f.name, _plain(f.type)) for f in stream]
    if have != want:
        missing = [f"{n} {t}" for n, t in want if (n, t) not in have]
        extra = [f"{n} {t}" for n, t in have if (n, t) not in want]
        raise SinkOptionError(f"groupcoord-delta: the table at {path} has other columns than the stream "
                              f"(the stream's not in the table: {', '.join(missing) or 'none'}; the table's not in "
                              f"the stream: {', '.join(extra) or 'none'})")


def _plain(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return pa.binary()
    return kind
