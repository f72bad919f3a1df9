"""The command line of ``jobs/streaming_ingest.py`` (kept in the package so it is importable and tested).

Every flag has a ``spark.groupcoord.*`` key; precedence, lowest first: code defaults < ``--conf-file`` < Spark conf
(``--conf spark.groupcoord.X=...`` given to spark-submit) < ``--conf KEY=VALUE`` given to the job < flags.
Errors are one line on stderr: exit 2 for bad configuration, 1 for a failed run; 0 after a clean finish or stop.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from groupcoord.config import ConfigError, resolve_config
from groupcoord.config.console import log_to_stderr

PROG = "streaming_ingest"
EXIT_RUNTIME = 1
EXIT_USAGE = 2
log = logging.getLogger("groupcoord.ingest")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{PROG}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The job's flags."""
    parser = _Parser(prog=PROG, description="Ingest topics into a Delta table exactly once, as the members of a "
                                            "groupcoord consumer group: Structured Streaming queries (--engine "
                                            "structured, the default) or Spark executor tasks (--engine members).")
    parser.add_argument("--group", metavar="G", help="consumer group id (spark.groupcoord.group.id)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--topics", metavar="T1,T2", help="topics to consume (spark.groupcoord.topics)")
    which.add_argument("--pattern", metavar="REGEX", help="topics matching REGEX (spark.groupcoord.pattern)")
    parser.add_argument("--source", metavar="embedded|kafka://HOST:PORT", help="spark.groupcoord.source")
    parser.add_argument("--sink", metavar="PATH", help="Delta table to append to (spark.groupcoord.sink)")
    parser.add_argument("--engine", choices=("structured", "members"),
                        help="structured (default): one Structured Streaming query per member, into the "
                             "groupcoord-delta sink; members: executor tasks as group members "
                             "(spark.groupcoord.engine)")
    parser.add_argument("--members", type=int, metavar="N",
                        help="group members: queries, or executor tasks with --engine members "
                             "(spark.groupcoord.members)")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="structured engine: the queries' checkpoints (spark.groupcoord.streaming.checkpoint)")
    parser.add_argument("--available-now", action="store_true", default=None,
                        help="consume up to the log ends seen at start, commit, leave, exit 0")
    parser.add_argument("--auto-offset-reset", choices=("earliest", "latest"),
                        help="spark.groupcoord.auto.offset.reset")
    parser.add_argument("--max-records-per-batch", type=int, metavar="N", help="spark.groupcoord.max.records.per.batch")
    parser.add_argument("--assignors", metavar="A1,A2", help="assignors offered, preferred first "
                                                             "(spark.groupcoord.assignors)")
    parser.add_argument("--state-root", metavar="DIR", help="state root (spark.groupcoord.state.root)")
    parser.add_argument("--conf-file", metavar="FILE", help="a spark-defaults style file of spark.groupcoord.* keys")
    parser.add_argument("--conf", metavar="KEY=VALUE", action="append", default=[],
                        help="set a spark.groupcoord.* key (the prefix may be left out); repeatable")
    parser.add_argument("--demo-leave-after", type=int, metavar="N",
                        help="demo: member (or query) 0 leaves the group after ingesting N records (a rebalance)")
    parser.add_argument("--no-progress-tty", action="store_true", help="plain progress lines even on a TTY")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, resolve, run; return the exit code."""
    args = build_parser().parse_args(argv)
    log_to_stderr(quiet=["groupcoord.member"])
    try:
        return _run(args)
    except ConfigError as exc:
        sys.stderr.write(f"{PROG}: error: {str(exc).splitlines()[0]}\n")
        return EXIT_USAGE
    except Exception as exc:
        log.debug("run failed", exc_info=True)
        sys.stderr.write(f"{PROG}: error: {(str(exc).strip() or type(exc).__name__).splitlines()[0]}\n")
        return EXIT_RUNTIME


def _run(args: argparse.Namespace) -> int:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    from groupcoord.cluster.supervisor import DRIVER_INSTANCE_ENV
    from groupcoord.ingest.config import IngestConfig
    from groupcoord.ingest.job import run_ingest
    from groupcoord.ingest.pair import check_pair, driver_instance
    from groupcoord.ingest.warm_up import daemon_settings
    from groupcoord.state_root import StateRoot, StateRootError

    builder = SparkSession.builder.appName(f"groupcoord-ingest-{args.group or 'job'}")
    for key, value in daemon_settings(SparkConf().get("spark.master", "local[*]") or "local[*]").items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    log.info("Spark application %s started", spark.sparkContext.applicationId)
    config = resolve_config(
        conf_file=args.conf_file, spark_conf=spark.sparkContext.getConf().getAll(), conf=args.conf,
        flags={"group.id": args.group, "topics": args.topics, "pattern": args.pattern, "source": args.source,
               "sink": args.sink, "members": args.members, "available.now": args.available_now,
               "auto.offset.reset": args.auto_offset_reset, "assignors": args.assignors,
               "max.records.per.batch": args.max_records_per_batch, "engine": args.engine,
               "streaming.checkpoint": args.checkpoint,
               "state.root": args.state_root or os.environ.get("GROUPCOORD_STATE_ROOT")},
    )
    ingest = IngestConfig.from_config(config)
    instance = driver_instance()
    check_pair(instance, config["engine"], dict(spark.sparkContext.getConf().getAll()))
    if instance is not None:
        log.info("driver %d of a driver pair (%s)", instance, DRIVER_INSTANCE_ENV)
    if not config["state.root"]:
        raise ConfigError("no state root: pass --state-root or set spark.groupcoord.state.root")
    try:
        root = StateRoot.open(config["state.root"], create=True)
    except StateRootError as exc:
        raise ConfigError(str(exc)) from None
    tty = False if args.no_progress_tty else None
    if config["engine"] == "structured":
        from groupcoord.ingest.structured import run_structured
        from groupcoord.ingest.warm_up import start_warm_up

        start_warm_up(spark)  # while the coordinator and the queries start

        run_structured(spark, ingest, root, checkpoint=config["streaming.checkpoint"],
                       trigger_ms=config["streaming.trigger.ms"],
                       session_timeout_ms=config["streaming.session.timeout.ms"],
                       demo_leave_after=args.demo_leave_after, tty=tty, instance=instance)
        return 0
    run_ingest(spark, ingest, root, demo_leave_after=args.demo_leave_after, config_keys=config, tty=tty)
    return 0
