"""``writeStream.format("groupcoord-delta")``: the exactly-once Delta sink of a ``groupcoord`` source.

A Python Data Source streaming writer (pyspark 4.2):

- **executors** (:meth:`DeltaStreamWriter.write`) write their rows into the table's directory as Parquet, one file
  per topic-partition per task, and return the files as the commit message; nothing is committed yet;
- **the driver** (:meth:`DeltaStreamWriter.commit`, in a Python worker of the driver) reads which offsets the
  source's batch covers from the query's checkpoint, commits the files and one app transaction per
  ``<group>/<topic>/<partition>`` in one Delta commit through delta-rs (:mod:`~groupcoord.sink.commit`: rows the
  table holds already are dropped, a gap fails the query, a concurrent commit of the same partitions makes it plan
  again), and right after, commits the same offsets to the group, fenced by the generation in which the source read
  them. It does not wait for the source's ``commit(end)``, which Spark calls only when it plans the next batch;
- ``abort`` deletes the files of a failed batch that the table does not hold (a commit that died after its Delta
  commit keeps them).

So the table never holds a record twice nor skips one, across restarts, crashes between the Delta commit and the
group commit, killed workers, partitions moving between queries and several queries writing one table; and the
group's committed offsets equal the table's versions. :func:`register_sink` registers the format in a session.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage

from groupcoord.sink.files import PartitionFile, remove_files, write_partition_files
from groupcoord.sink.options import SinkOptionError, SinkOptions, check_table_schema, sink_table_schema

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from groupcoord.member.config import MemberOptions
    from groupcoord.sink.batches import SourceBatch
    from groupcoord.sink.plan import TopicPartitionKey
    from groupcoord.state_root import StateRoot

log = logging.getLogger("groupcoord.sink.data_sink")

FORMAT = "groupcoord-delta"
CRASH_AT_ENV = "GROUPCOORD_CRASH_AT"
""":data:`groupcoord.runtime.crash_points.ENV`, named here so that the runtime package is imported only when a fault
test arms a crash point (see :func:`crash_point`)."""


def crash_point(name: str) -> None:
    """:func:`groupcoord.runtime.crash_points.crash_point`, when the environment arms a crash point (it does nothing
    otherwise). Importing the runtime package costs every executor's Python worker a second of an idle core (the
    coordinator's service comes with it), and a worker writing this sink needs nothing else of it."""
    if os.environ.get(CRASH_AT_ENV, "").strip():
        from groupcoord.runtime.crash_points import crash_point as armed

        armed(name)


@dataclass(frozen=True)
class SinkFiles(WriterCommitMessage):
    """The commit message of one task: the files it wrote."""

    files: tuple[PartitionFile, ...]


class GroupcoordDeltaSink(DataSource):
    """The ``groupcoord-delta`` format (options: :mod:`groupcoord.sink.options`)."""

    defaults: ClassVar[Mapping[str, str]] = {}
    """Option defaults from the session's ``spark.groupcoord.*`` conf (set by :func:`register_sink`)."""
    client_security: ClassVar[Mapping[str, str]] = {}
    """The session's client security keys (:data:`~groupcoord.security.config.CLIENT_SECURITY_KEYS`: names and file
    paths, no secret), for the group commit (set by :func:`register_sink`)."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return FORMAT

    def streamWriter(self, schema: StructType, overwrite: bool) -> DeltaStreamWriter:
        """The writer of a query; checks the options and the table's shape, creating the table when missing."""
        from pyspark.sql.pandas.types import to_arrow_schema

        from groupcoord.sink.commit import ensure_table

        options = SinkOptions.parse(dict(self.options), self.defaults)
        if overwrite:
            raise SinkOptionError("groupcoord-delta: the complete output mode is not supported (append only)")
        stream = sink_table_schema(to_arrow_schema(schema, timezone="UTC"))
        table = ensure_table(options.table, stream)
        check_table_schema(pa.schema(table.schema().to_arrow()), stream, options.path)
        return DeltaStreamWriter(options, stream, self.client_security)


class DeltaStreamWriter(DataSourceStreamArrowWriter):
    """One query's writer: :meth:`write` on executors, :meth:`commit` and :meth:`abort` on the driver."""

    def __init__(self, options: SinkOptions, schema: pa.Schema,
                 client_security: Mapping[str, str] | None = None) -> None:
        self.options = options
        self.schema = schema
        self.client_security = dict(client_security or {})

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkFiles:
        """Write this task's rows, one file per topic-partition; nothing is committed."""
        files = SinkFiles(tuple(write_partition_files(iterator, self.options.table, self.schema)))
        crash_point("sink-write")
        return files

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commit the batch to the table, then its offsets to the group (see the module docstring)."""
        from groupcoord.sink.batches import read_source_batch
        from groupcoord.sink.commit import commit_batch
        from groupcoord.sink.group import reset_markers, source_batch

        options = self.options
        batch = read_source_batch(options.checkpoint_location, batchId, source_batch)
        if batch.group_id != options.group_id:
            raise SinkOptionError(f"groupcoord-delta: group.id '{options.group_id}' is not the group of the query's "
                                  f"source ('{batch.group_id}'); both must name the same group")
        files = [f for m in messages if isinstance(m, SinkFiles) for f in m.files]
        root = self.state_root()
        done = commit_batch(options.table, self.schema, options.group_id, batch.ranges, files,
                            resets=lambda: {**reset_markers(root, options.group_id), **batch.jumps},
                            attempts=options.commit_attempts, reader=str(batch.end.get("member") or ""))
        log.info("batch %d of group %s: table version %s, %d row(s), offsets %s", batchId, options.group_id,
                 done.table_version, done.rows, dict(done.versions))
        crash_point("sink-after-delta-commit")
        if done.versions:
            self.commit_to_group(batch, done.versions)

    def commit_to_group(self, batch: SourceBatch, versions: Mapping[TopicPartitionKey, int]) -> None:
        """Commit the table's ``versions`` to the group, as the member that read ``batch`` (fault tests override
        it to die right after the Delta commit)."""
        from groupcoord.sink.group import commit_to_group

        commit_to_group(self.state_root(), batch, versions, options=self.member_options())

    def member_options(self) -> MemberOptions:
        """How the driver's commit connects to the coordinator: the session's client security keys (read here, in
        the driver, so a password file or variable of the driver is read where it exists)."""
        from groupcoord.config import PREFIX, resolve_config
        from groupcoord.member.config import MemberOptions

        return MemberOptions.from_config(resolve_config(
            spark_conf={f"{PREFIX}{name}": value for name, value in self.client_security.items()}))

    def state_root(self) -> StateRoot:
        """The group's state root, opened once in the driver's commit worker (never pickled: an S3 root holds the
        credentials of the process that opened it)."""
        from groupcoord.state_root import StateRoot

        root = self.__dict__.get("_root")
        if root is None:
            root = self.__dict__["_root"] = StateRoot.open(self.options.state_root, storage=self.options.storage)
        return root

    def __getstate__(self) -> dict[str, Any]:
        """The options and the schema: an opened state root stays in its process."""
        return {key: value for key, value in self.__dict__.items() if key != "_root"}

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Delete the files the batch's tasks wrote that the table does not hold.

        Spark aborts a batch whose ``commit`` failed, also when the commit's worker died after its Delta commit
        (before the group commit): the files that commit added are the table's then, and stay."""
        from groupcoord.sink.commit import table_files

        files = [f for m in messages if isinstance(m, SinkFiles) for f in m.files]
        table = self.options.table
        held = table_files(table)
        orphans = [f for f in files if f.path not in held]
        log.warning("batch %d of group %s aborted; removing %d written file(s) (%d kept: the table holds them)",
                    batchId, self.options.group_id, len(orphans), len(files) - len(orphans))
        remove_files(orphans, table)


def register_sink(spark: SparkSession, defaults: Mapping[str, Any] | None = None) -> None:
    """Register ``groupcoord-delta`` in ``spark``, its option defaults taken from the session's
    ``spark.groupcoord.*`` conf (``defaults``, short key names, override them)."""
    from groupcoord.config import PREFIX
    from groupcoord.security.config import CLIENT_SECURITY_KEYS

    conf = {k.removeprefix(PREFIX): v for k, v in spark.sparkContext.getConf().getAll() if k.startswith(PREFIX)}
    runtime = {k.removeprefix(PREFIX): v for k, v in spark.conf.getAll.items() if k.startswith(PREFIX)}
    session_defaults = {k: str(v) for k, v in {**conf, **runtime, **(defaults or {})}.items()
                        if k in ("state.root", "group.id") or k.startswith("storage.")}
    security = {k: str(v) for k, v in {**conf, **runtime}.items() if k in CLIENT_SECURITY_KEYS}

    class SessionGroupcoordDeltaSink(GroupcoordDeltaSink):
        """``groupcoord-delta`` with this session's defaults (pickled by value with them)."""

        defaults: ClassVar[Mapping[str, str]] = session_defaults
        client_security: ClassVar[Mapping[str, str]] = security

    spark.dataSource.register(SessionGroupcoordDeltaSink)
