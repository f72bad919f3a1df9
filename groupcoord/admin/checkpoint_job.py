"""Command line of the offset checkpoint job (``jobs/offset_checkpoint.py`` under spark-submit)::

    spark-submit jobs/offset_checkpoint.py --state-root DIR [--run-id ID] [--window N]
        [--prometheus FILE] [--plot FILE] [--conf-file FILE] [--conf KEY=VALUE ...]

Settings resolve as everywhere (code defaults < --conf-file < Spark conf < --conf < flags). It prints the run's
report (each group's Burrow status, then every partition) and exits 0; errors are one ``offset_checkpoint: error:``
line and exit 1 (2 for a bad command line).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from groupcoord.admin.checkpoint import CheckpointConfig, CheckpointResult, read_window, run_checkpoint
from groupcoord.admin.text_table import format_table
from groupcoord.config.console import log_to_stderr

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("groupcoord.admin.checkpoint_job")

PROG = "offset_checkpoint"


def build_parser() -> argparse.ArgumentParser:
    """The job's flags."""
    parser = argparse.ArgumentParser(prog=PROG, description="Snapshot committed offsets and lag; judge each group.")
    parser.add_argument("--state-root", metavar="DIR", help="state root (else spark.groupcoord.state.root)")
    parser.add_argument("--run-id", metavar="ID", help="id of this run; re-running an id replaces its rows")
    parser.add_argument("--window", type=int, metavar="N", help="runs Burrow's rules look at (checkpoint.window)")
    parser.add_argument("--prometheus", metavar="FILE", help="write a Prometheus textfile (checkpoint.prometheus.file)")
    parser.add_argument("--plot", metavar="FILE", help="draw a PNG of lag over the checkpoint runs (needs matplotlib)")
    parser.add_argument("--conf-file", metavar="FILE", help="a spark-defaults style file of spark.groupcoord.* keys")
    parser.add_argument("--conf", metavar="KEY=VALUE", action="append", default=[], help="set a key; repeatable")
    return parser


def report_text(result: CheckpointResult) -> str:
    """The human-readable report of one run."""
    header = (f"Checkpoint run {result.run_id} at {result.run_time.isoformat()}: {result.rows} partition offsets "
              f"written to {result.table_path}")
    groups = format_table(("GROUP", "STATUS", "WORST-PARTITION", "#MEMBERS", "LAG"), [
        (g.group_id, g.status.status, g.status.worst_partition, g.members, g.lag_sum) for g in result.groups])
    partitions = format_table(
        ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "STATUS"),
        [(g.group_id, p.topic, p.partition, p.offset, p.log_end_offset, p.lag, p.status)
         for g in result.groups for p in g.partitions])
    return f"{header}\n\n{groups}\n\n{partitions}"


def main(argv: Sequence[str] | None = None, *, spark: SparkSession | None = None) -> int:
    """Run the job; ``spark`` defaults to the active (or a new) SparkSession. Returns the exit code."""
    from groupcoord.config import ConfigError, resolve_config
    from groupcoord.config.console import one_line
    from groupcoord.state_root import StateRoot, StateRootError

    args = build_parser().parse_args(argv)
    try:
        if spark is None:  # the spark-submit job: its progress lines go to stderr (a caller's session: its logging)
            from pyspark.sql import SparkSession

            log_to_stderr()
            spark = SparkSession.builder.appName("groupcoord-offset-checkpoint").getOrCreate()
        config = resolve_config(conf_file=args.conf_file, spark_conf=spark.sparkContext.getConf().getAll(),
                                conf=args.conf, flags={"state.root": args.state_root, "checkpoint.window": args.window,
                                                       "checkpoint.prometheus.file": args.prometheus})
        if not config["state.root"]:
            raise ConfigError("no state root: pass --state-root DIR or set spark.groupcoord.state.root")
        settings = CheckpointConfig.from_config(config)
        root = StateRoot.open(config["state.root"], storage=config.section("storage."))
        result = run_checkpoint(spark, root, config=settings, run_id=args.run_id)
        print(report_text(result))
        if settings.prometheus_file:
            from groupcoord.admin.prometheus import write_textfile

            log.info("wrote %s", write_textfile(settings.prometheus_file, result.groups))
        if args.plot:
            from groupcoord.admin.plot import plot_lag

            log.info("wrote %s", plot_lag(read_window(result.table_path, settings.window), args.plot))
    except (ConfigError, StateRootError, ValueError, RuntimeError, OSError) as exc:
        sys.stderr.write(f"{PROG}: error: {one_line(exc)}\n")
        return 2 if isinstance(exc, ConfigError) else 1
    return 0
