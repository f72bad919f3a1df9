"""The options of the ``groupcoord-delta`` sink and the shape of its table, checked when the query starts.

Options (case-insensitive, as Spark passes them):

- ``path``: the Delta table (``writeStream.start(path)`` sets it too); created on first use;
- ``group.id``: the consumer group of the query's ``groupcoord`` source (checked against the source's batches);
- ``checkpointLocation``: the query's checkpoint, where the sink reads which offsets each batch of the source covers;
- ``state.root``: the state root of the group (default: the session's ``spark.groupcoord.state.root``);
- ``commit.attempts``: how many times a commit recomputes after a concurrent commit of the same partitions (5).

The other ``spark.groupcoord.*`` keys without their prefix are accepted and ignored, so one options map can serve the
source and the sink. Anything else fails the query at start with a message naming it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from groupcoord.config import REGISTRY, ConfigError

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

    @staticmethod
    def parse(options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> SinkOptions:
        """Resolve ``options`` over ``defaults`` (short ``spark.groupcoord.*`` names), or raise naming the problem."""
        given = {key.lower(): value for key, value in options.items()}
        known = {key.name.lower() for key in REGISTRY} | set(_OWN) | set(_SPARKS)
        for key in given:
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
            path=local_path(required("path", "the Delta table: .option('path', ...) or .start(path)")),
            group_id=required("group.id", "the same group.id as the query's groupcoord source"),
            checkpoint=local_path(required("checkpointlocation", "the query's checkpoint, where the sink reads the "
                                                                 "offsets of each batch")),
            state_root=local_path(required("state.root", "or set spark.groupcoord.state.root in the session")),
            commit_attempts=int(attempts),
        )


def local_path(location: str) -> str:
    """A local path from a path or a ``file:`` URI."""
    if location.startswith("file:"):
        location = location.removeprefix("file:")
        location = "/" + location.lstrip("/")
    return str(Path(location))


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
