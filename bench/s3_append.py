"""Record-log append latency: the state root on S3 (versitygw on loopback) against local disk, and groupcoord's own
constant-time append against delta-rs's commit. Printed, one run::

    python -m bench.s3_append [--appends 200] [--records 100] [--latency-ms 20]

Cases, each ``--appends`` sequential appends of ``--records`` offset-commit records to a fresh record log:

- ``local, own append``: :class:`DeltaRecordLog` on a local directory (Parquet file, commit JSON hard-linked,
  fsynced);
- ``s3, own append``: the same log on S3 (:mod:`groupcoord.storage.object_files`: a data-object put, a HEAD of the
  previous version, the commit's put-if-absent);
- ``local, delta-rs`` and ``s3, delta-rs``: delta-rs's own ``write_deltalake(mode="append")`` of the same rows
  with ``max_commit_retries=0``, the table opened once and kept.

A loopback server hides S3's per-request latency: on S3 itself each request costs tens of milliseconds, so the
number of requests per commit is what counts there. The two S3 cases run again through a proxy
(:mod:`bench.s3_proxy`) that delays every request by ``--latency-ms`` and counts them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from deltalake import CommitProperties, DeltaTable, write_deltalake

from bench.s3_proxy import ProxyProcess
from bench.s3_server import versitygw
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.storage.location import TableLocation, parse_location


def _records(count: int, round_: int) -> list[EncodedRecord]:
    return [EncodedRecord("offset_commit", f"g/t/{p}", f'{{"offset": {round_}}}'.encode()) for p in range(count)]


def own_append(location: TableLocation, appends: int, records: int) -> list[float]:
    """Seconds per append of the record log's own path at ``location``."""
    log = DeltaRecordLog(location)
    version = log.append(_records(records, 0), expected_version=-1)
    took = []
    for round_ in range(1, appends + 1):
        started = time.perf_counter()
        version = log.append(_records(records, round_), expected_version=version)
        took.append(time.perf_counter() - started)
    log.close()
    return took


def delta_rs_append(location: TableLocation, appends: int, records: int) -> list[float]:
    """Seconds per append of delta-rs's own commit of the same rows (the table kept open between commits)."""
    log = DeltaRecordLog(location)
    log.append(_records(records, 0), expected_version=-1)  # creates the table with the log's schema
    table = DeltaTable(location.uri, storage_options=location.delta_options())
    took = []
    for round_ in range(1, appends + 1):
        rows = log._rows([_records(records, round_)], version=round_, segment=-1, snapshot_rows=0)
        started = time.perf_counter()
        write_deltalake(table, rows, mode="append", commit_properties=CommitProperties(max_commit_retries=0))
        took.append(time.perf_counter() - started)
    return took


def _row(name: str, took: list[float], requests: float | None = None) -> str:
    ms = sorted(t * 1000 for t in took)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    per_commit = "" if requests is None else f"{requests:.1f}"
    return f"| {name} | {statistics.median(ms):.1f} | {p99:.1f} | {statistics.fmean(ms):.1f} | {per_commit} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, versitygw(Path(scratch) / "s3") as server:
        server.create_bucket("bench")
        s3 = parse_location("s3://bench", environ=server.env)
        cases: list[tuple[str, Callable[[TableLocation, int, int], list[float]], TableLocation]] = [
            ("local, own append", own_append, parse_location(Path(scratch) / "own")),
            ("s3, own append", own_append, s3 / "own"),
            ("local, delta-rs", delta_rs_append, parse_location(Path(scratch) / "delta-rs")),
            ("s3, delta-rs", delta_rs_append, s3 / "delta-rs"),
        ]
        print(f"{args.appends} appends of {args.records} records each")
        print("| case | p50 ms | p99 ms | mean ms | requests per append |\n| --- | --- | --- | --- | --- |")
        for name, case, location in cases:
            print(_row(name, case(location, args.appends, args.records)), flush=True)
        proxy = ProxyProcess(server.port, delay_ms=args.latency_ms)
        try:
            slow = parse_location("s3://bench", environ={**server.env, "AWS_ENDPOINT_URL": proxy.endpoint})
            for name, case in (("own append", own_append), ("delta-rs", delta_rs_append)):
                before = proxy.requests()
                took = case(slow / f"slow-{name}", args.appends, args.records)
                # the table's creation and first append are among the requests: a small overcount
                per_append = (proxy.requests() - before) / args.appends
                print(_row(f"s3 +{args.latency_ms:g} ms a request, {name}", took, per_append), flush=True)
        finally:
            proxy.close()


if __name__ == "__main__":
    main()
