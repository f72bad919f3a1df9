"""Targets and correctness checks as data: how a result's checks are read, evaluated and reported, and which misses
fail ``bench.run``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench import report
from bench.results_io import CHECK_NAME, KNOWN_MISSES, RESULTS_DIR, Check, checks_of, derive_checks, holds, known_misses
from bench.run import run_failures


def _result(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "date": "2026-11-27 10:00 UTC", "command": "python -m bench.run", "rows": [],
            "summary": {}, **fields}


def test_holds_compares_figures_as_recorded() -> None:
    assert holds(0.25, "<", 0.3) and not holds(0.333, "<", 0.3)
    assert holds("> 149.3", ">=", 50)  # a lower bound (the peer hit its cap) above the target
    assert holds("1,071", ">", 1000)
    assert holds(True, "==", True) and not holds("DIFFERENT rows (9 vs 10)", "==", "same rows as Java")
    assert not holds(None, "<", 1)  # a target without a figure is not met
    assert not holds("not run", "<", 10)


def test_a_stored_check_wins_over_the_derived_one_of_its_name() -> None:
    stored = Check("simulate", "failed_schedules[memory]", "correctness", 0, "==", 0)
    result = _result("simulate", rows=[{"log": "memory", "failed": 3}, {"log": "delta", "failed": 1}],
                     checks=[stored.to_json()])

    checks = {c.name: c for c in checks_of(result)}

    assert checks["failed_schedules[memory]"].met  # as stored
    assert not checks["failed_schedules[delta]"].met  # derived: the result stored no check of that name


def test_full_only_targets_apply_to_full_runs() -> None:
    quick = _result("fuzz", summary={"failures": 0, "inputs": 100_000})
    full = {**quick, "command": "python -m bench.run --full"}

    assert [c.name for c in derive_checks(quick)] == ["failures"]
    assert [(c.name, c.met) for c in derive_checks(full)] == [("failures", True), ("inputs", False)]


def test_the_latest_simulation_campaign_is_checked() -> None:
    result = _result("simulate", rows=[], campaigns=[{"commit": "a", "schedules": 100_000, "failed": 4},
                                                     {"commit": "b", "schedules": 100_000, "failed": 0}])

    assert [(c.name, c.met) for c in derive_checks(result)] == [("failed_schedules[campaign b, 100000]", True)]


def test_assign_javas_checks_read_its_check_column() -> None:
    result = _result("assign_java", rows=[
        {"case": "10,000 x 100", "assignor": "range", "check": "same rows as Java"},
        {"case": "10,000 x 100", "assignor": "roundrobin", "check": "DIFFERENT rows (9 vs 10)"},
        {"case": "10,000 x 100", "assignor": "sticky", "check": "spread 2 (Java 1)"},
        {"case": "100,000 x 1,000", "assignor": "range", "check": ""}])

    assert [(c.name, c.kind, c.met) for c in derive_checks(result)] == [
        ("rows_as_java[range, 10,000 x 100]", "correctness", True),
        ("rows_as_java[roundrobin, 10,000 x 100]", "correctness", False),
        ("spread_vs_java[sticky, 10,000 x 100]", "correctness", False)]


def test_results_recorded_before_checks_existed_list_issue_26s_misses(tmp_path: Path) -> None:
    """The 2026-11-26 make bench's results (no ``checks`` stored), cut to the figures that matter: the list names
    the failed schedules, the heartbeat p99 and the four small-group p50s, and nothing else."""
    small = {"range": 0.249, "roundrobin": 0.245, "sticky": 0.333, "cooperative-sticky": 0.331, "uniform": 0.311,
             "weighted": 0.306}
    results = [
        _result("simulate", rows=[{"log": "memory", "failed": 4}, {"log": "delta", "failed": 0}],
                summary={"schedules_failed": 4, "targets": {"schedules_failed": "0"}}),
        _result("member_capacity", rows=[{"members": 10_000, "false_expiries": 0},
                                         {"members": 2_500, "false_expiries": 0}],
                summary={"rtt_p99_ms": 460.09, "false_expiries": 0, "targets": {"rtt_p99_ms": "< 50"}}),
        _result("assign", rows=[{"case": "small: 10 x 100 (p50 of 9)", "assignor": name, "seconds": seconds}
                                for name, seconds in small.items()]
                + [{"case": "100,000 x 1,000", "assignor": "sticky", "seconds": 0.8, "speedup": "> 149.3"},
                   {"case": "1,000,000 x 2,000", "assignor": "uniform", "seconds": 6.44, "speedup": ""}]),
    ]

    missed = [(m.check.key, m.check.value, m.check.op, m.check.target) for m in report.misses(results, {})]

    assert missed == [
        ("simulate:failed_schedules[memory]", 4, "==", 0),
        ("assign:small_group_p50_s[sticky]", 0.333, "<", 0.3),
        ("assign:small_group_p50_s[cooperative-sticky]", 0.331, "<", 0.3),
        ("assign:small_group_p50_s[uniform]", 0.311, "<", 0.3),
        ("assign:small_group_p50_s[weighted]", 0.306, "<", 0.3),
        ("member_capacity:rtt_p99_ms", 460.09, "<", 50.0),
    ]


def test_every_result_has_checks_or_checks_by_raising() -> None:
    """A benchmark with no check at all must be one of those whose failures raise (bench.results_io.RULES)."""
    raising = {"peer_ingest", "streaming_ingest", "streaming_ingest_handover", "rebalance_soak", "s3_disk"}
    for path in sorted(RESULTS_DIR.glob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        assert checks_of(result) or result["name"] in raising, result["name"]


def test_known_misses_are_one_line_each_with_a_reason(tmp_path: Path) -> None:
    reasons = known_misses()  # raises on a line that is not `benchmark:check reason`
    lines = [line for line in KNOWN_MISSES.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    assert len(reasons) == len(lines)  # no key twice
    (tmp_path / "misses.txt").write_text("# comment\n\na:b[c, d]  why it is missed\n", encoding="utf-8")
    assert known_misses(tmp_path / "misses.txt") == {"a:b[c, d]": "why it is missed"}
    (tmp_path / "misses.txt").write_text("a:b[c, d]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not `benchmark:check reason`"):
        known_misses(tmp_path / "misses.txt")


def test_every_check_name_can_be_named_in_the_known_misses_file() -> None:
    for path in sorted(RESULTS_DIR.glob("*.json")):
        for check in checks_of(json.loads(path.read_text(encoding="utf-8"))):
            assert re.fullmatch(CHECK_NAME, check.name), check.key


def test_the_report_opens_with_the_misses_and_their_reasons(tmp_path: Path) -> None:
    (tmp_path / "simulate.json").write_text(json.dumps(_result(
        "simulate", rows=[{"log": "memory", "failed": 4}])), encoding="utf-8")
    (tmp_path / "load_time.json").write_text(json.dumps(_result(
        "load_time", summary={"load_s": 6.5})), encoding="utf-8")
    (tmp_path / "fuzz.json").write_text(json.dumps(_result("fuzz", summary={"failures": 0})), encoding="utf-8")

    text = report.render(tmp_path, {"load_time:load_s_worst": "a slow disk", "fuzz:failures": "stale"})

    opening = text.split("## ", 2)[1]
    assert opening.startswith("Missed targets and failed checks")
    assert "2 of 3 checks fail in the 3 results below (1 correctness, 1 speed; 1 with no reason recorded)" in opening
    assert "| simulate | failed_schedules[memory] | correctness | 4 | == 0 | 2026-11-27 10:00 UTC | " \
           "**no reason recorded** |" in opening
    assert "| load_time | load_s_worst | speed | 6.5 | < 5 | 2026-11-27 10:00 UTC | a slow disk |" in opening
    assert "(remove them): `fuzz:failures`" in opening


def test_a_run_fails_on_correctness_and_on_unexplained_misses_of_what_it_wrote() -> None:
    def miss(benchmark: str, kind: str, reason: str) -> report.Miss:
        return report.Miss(Check(benchmark, "x", kind, 1, "==", 0), "today", reason)  # type: ignore[arg-type]

    wrong = miss("simulate", "correctness", "known, being fixed")
    unexplained = miss("assign", "speed", report.NO_REASON)
    explained = miss("member_capacity", "speed", "measured why")
    old = miss("fuzz", "correctness", report.NO_REASON)

    assert run_failures([wrong, unexplained, explained, old], {"simulate", "assign", "member_capacity"}) == [
        wrong, unexplained]


def test_a_benchmark_that_raised_leaves_no_figures_and_a_failed_check(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Its old result is replaced (no figure of an earlier run passes for this one's); the report opens with it."""
    import bench.results_io as results_io
    from bench import report

    monkeypatch.setattr(results_io, "RESULTS_DIR", tmp_path)
    results_io.write_result("commit_throughput", title="Offset commits", rows=[{"offsets_per_s": 120_000}],
                            summary={"offsets_per_s": 120_000})
    results_io.write_failure("commit_throughput", "RuntimeError: serve did not start")
    (result,) = report.load_results(tmp_path)
    assert result["rows"] == [] and result["title"] == "Offset commits"
    (check,) = results_io.checks_of(result)
    assert (check.name, check.kind, check.met) == ("completed", "correctness", False)
    assert "serve did not start" in report.render(tmp_path, reasons={})


def test_make_bench_leaves_the_cluster_drills_to_bench_full() -> None:
    from bench.run import BENCHMARKS, selected

    assert "cluster_faults" in BENCHMARKS and "cluster_faults" not in selected([], full=False)
    assert selected([], full=True) == list(BENCHMARKS)
    assert selected(["cluster_faults"], full=False) == ["cluster_faults"]
