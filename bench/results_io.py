"""Writing one benchmark's results, with the machine, the date and the exact command, and checking them.

Every result carries ``checks``: its targets and correctness checks as data (:class:`Check`: a figure, an operator
and a target, of kind ``speed`` or ``correctness``), evaluated by one function (:func:`holds`). :func:`derive_checks`
reads them off a result's rows and summary, one rule per benchmark (:data:`RULES`), so results recorded before
checks existed are checked the same way. ``bench.report`` lists every check that fails at the top of
``docs/benchmarks.md``, with its reason from :data:`KNOWN_MISSES`; ``bench.run`` exits non-zero on a failed
correctness check and on a miss nobody has explained.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

RESULTS_DIR = Path(__file__).resolve().parent / "results"
KNOWN_MISSES = Path(__file__).resolve().parent / "known_misses.txt"
CHECK_NAME = r"[A-Za-z0-9_]+(?:\[(?:[^\[\]]|\[[^\[\]]*\])*\])?"
"""A check's name: a figure's key, then what it is of in brackets (``small_group_p50_s[sticky]``,
``records_in_table[kafka, local[4,4]]``: brackets nest one level)."""
KNOWN_MISS_LINE = re.compile(rf"(?P<key>[A-Za-z0-9_]+:{CHECK_NAME})\s+(?P<reason>\S.*)")


def machine_description() -> dict[str, Any]:
    """CPU model, core count, memory, OS and Python: enough to compare runs across machines."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory_gib,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def write_result(
    name: str,
    *,
    title: str,
    rows: list[dict[str, Any]],
    notes: str = "",
    summary: dict[str, Any] | None = None,
    command: str | None = None,
    checks: Iterable[Check] = (),
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write ``bench/results/<name>.json``.

    ``rows`` is a table (one dict per case, same keys in each); ``summary`` holds headline figures and targets;
    ``command`` defaults to the command line that ran this process. ``checks`` are stored with the ones
    :func:`derive_checks` reads off the result (a derived check of the same name gives way to the given one).
    """
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    payload = {
        "name": name,
        "title": title,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_description(),
        "command": command or " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
        "rows": rows,
        "summary": summary or {},
        "notes": notes,
        **(extra or {}),
    }
    payload["checks"] = [c.to_json() for c in merge_checks(list(checks), derive_checks(payload))]
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    return path


Kind = Literal["speed", "correctness"]
OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
}


@dataclass(frozen=True)
class Check:
    """One target or correctness check of a result: ``value op target`` must hold.

    ``speed``: a target a run may miss on a loaded machine (a miss needs a line in :data:`KNOWN_MISSES` saying why);
    ``correctness``: lost or duplicated records, a failed schedule, rows unlike the peer's (always a failure).
    """

    benchmark: str
    name: str
    kind: Kind
    value: Any
    op: str
    target: Any

    @property
    def key(self) -> str:
        """``benchmark:name``, as :data:`KNOWN_MISSES` names it."""
        return f"{self.benchmark}:{self.name}"

    @property
    def met(self) -> bool:
        return holds(self.value, self.op, self.target)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "value": self.value, "op": self.op, "target": self.target,
                "met": self.met}

    @classmethod
    def from_json(cls, benchmark: str, data: dict[str, Any]) -> Check:
        return cls(benchmark, data["name"], data["kind"], data["value"], data["op"], data["target"])


def _number(value: Any) -> Any:
    """A figure as recorded, made comparable: ``'1,071'`` -> 1071.0; ``'> 149.3'`` (a lower bound: the peer hit its
    cap) -> 149.3; booleans and other values unchanged."""
    if isinstance(value, str):
        text = value.replace(",", "").removeprefix("> ").strip()
        try:
            return float(text)
        except ValueError:
            return value
    return value


def holds(value: Any, op: str, target: Any) -> bool:
    """Whether ``value op target``; a missing or incomparable figure does not hold."""
    left, right = _number(value), _number(target)
    if left is None or right is None:
        return False
    try:
        return bool(OPS[op](left, right))
    except TypeError:
        return False


def merge_checks(first: list[Check], second: list[Check]) -> list[Check]:
    """``first``, then those of ``second`` whose name ``first`` lacks."""
    names = {c.name for c in first}
    return first + [c for c in second if c.name not in names]


def _parse_target(text: str) -> tuple[str, float]:
    """``'< 50'`` -> ``('<', 50.0)``; a bare ``'0'`` -> ``('==', 0.0)``; trailing words (``'>= 10000 (full)'``)
    are ignored."""
    words = text.split()
    if words[0] in OPS:
        return words[0], float(words[1].rstrip("x"))
    return "==", float(words[0])


def _full(result: dict[str, Any]) -> bool:
    return "--full" in str(result.get("command", ""))


Rule = Callable[[str, dict[str, Any]], list[Check]]


def _assign(name: str, result: dict[str, Any]) -> list[Check]:
    """Issue 4's targets, per row: a small group p50 < 0.3 s; >= 50x kafka-python sticky at 100k x 1000 for sticky,
    cooperative-sticky and uniform; 1M x 2000 <= 10 s; 1M x 10k < 60 s; a batch of 10,000 groups < 10 s."""
    checks = []
    for row in result.get("rows", []):
        case, assignor, seconds = str(row.get("case", "")), row.get("assignor"), row.get("seconds")
        if case.startswith("small:"):
            checks.append(Check(name, f"small_group_p50_s[{assignor}]", "speed", seconds, "<", 0.3))
        elif case.startswith("batch:"):
            checks.append(Check(name, f"batch_10k_groups_s[{assignor}]", "speed", seconds, "<", 10))
        elif case == "100,000 x 1,000" and assignor in ("sticky", "cooperative-sticky", "uniform") \
                and row.get("speedup") not in (None, ""):
            checks.append(Check(name, f"speedup_100k_x_1000[{assignor}]", "speed", row["speedup"], ">=", 50))
        elif case == "1,000,000 x 2,000" and assignor in ("sticky", "uniform"):
            checks.append(Check(name, f"seconds_1M_x_2000[{assignor}]", "speed", seconds, "<=", 10))
        elif case == "1,000,000 x 10,000":
            checks.append(Check(name, f"seconds_1M_x_10k[{assignor}]", "speed", seconds, "<", 60))
    return checks


def _assign_demo(name: str, result: dict[str, Any]) -> list[Check]:
    return [Check(name, f"job_ratio[{row['assignors']}]", "speed", row["ratio"], "<=", row["target_ratio"])
            for row in result.get("rows", []) if row.get("target_ratio") is not None]


def _assign_first_rebalance(name: str, result: dict[str, Any]) -> list[Check]:
    return [Check(name, f"p50_s[{row['strategy']}, {row['transition']}]", "speed", row["p50_s"], "<=",
                  row["target_s"]) for row in result.get("rows", []) if row.get("target_s") is not None]


def _assign_heterogeneous(name: str, result: dict[str, Any]) -> list[Check]:
    checks = []
    for row in result.get("rows", []):
        case = f"{row['assignor']}, {row['groups']} x {row['members']} x {row['partitions']}"
        checks.append(Check(name, f"balanced[{case}]", "correctness", row.get("balanced"), "==", True))
        if row.get("target_warm_s") is not None:
            checks += [Check(name, f"warm_p50_s[{case}]", "speed", row["warm_p50_s"], "<=", row["target_warm_s"]),
                       Check(name, f"cold_s[{case}]", "speed", row["cold_s"], "<=", row["target_cold_s"]),
                       Check(name, f"jobs[{case}]", "speed", row["jobs"], "<=", 3)]
    return checks


def _assign_java(name: str, result: dict[str, Any]) -> list[Check]:
    """Range and roundrobin give Java's rows exactly; the others' spread is no wider than Java's (rows whose whole
    Spark job was not timed, ``make bench``'s larger sizes, have no ``check``: their engine's checks are stored)."""
    checks = []
    for row in result.get("rows", []):
        label, check = f"{row['assignor']}, {row['case']}", str(row.get("check") or "")
        if not check:
            continue
        if check.startswith("spread "):
            ours, java = check.removeprefix("spread ").rstrip(")").split(" (Java ")
            checks.append(Check(name, f"spread_vs_java[{label}]", "correctness", int(ours), "<=", int(java)))
        else:
            checks.append(Check(name, f"rows_as_java[{label}]", "correctness", check, "==", "same rows as Java"))
    return checks


def _assign_java_rebalance(name: str, result: dict[str, Any]) -> list[Check]:
    return [Check(name, f"verdict[{row['assignor']}, {row['rebalance']}]", "correctness", row.get("verdict"), "==",
                  "as good or better") for row in result.get("rows", [])]


def _assign_engines(name: str, result: dict[str, Any]) -> list[Check]:
    return [Check(name, f"same_answers[{row['assignor']}, {row['subscriptions']}, {row['groups']} x {row['members']}"
                  f" x {row['partitions']}]", "correctness", row.get("same_answers"), "==", True)
            for row in result.get("rows", [])]


def _commit_throughput(name: str, result: dict[str, Any]) -> list[Check]:
    """Issue 3: >= 100,000 offsets/s (the log's capacity), ack p99 < 100 ms at that rate (with and without the
    materializer), at most 20 Delta commits/s, materializer lag <= 1 s."""
    summary = result.get("summary", {})
    return [
        Check(name, "capacity_offsets_per_s", "speed", summary.get("capacity_offsets_per_s"), ">=", 100_000),
        Check(name, "ack_p99_ms_at_target", "speed", summary.get("ack_p99_ms_at_target"), "<", 100),
        Check(name, "ack_p99_ms_at_target_with_materializer", "speed",
              summary.get("ack_p99_ms_at_target_with_materializer"), "<", 100),
        Check(name, "delta_commits_per_s_at_target", "speed", summary.get("delta_commits_per_s_at_target"), "<=", 20),
        Check(name, "materializer_lag_p99_s_at_target", "speed", summary.get("materializer_lag_p99_s_at_target"),
              "<=", 1),
    ]


def _failover(name: str, result: dict[str, Any]) -> list[Check]:
    return [Check(name, "lost_commits", "correctness", result.get("summary", {}).get("lost_commits"), "==", 0)]


def _fuzz(name: str, result: dict[str, Any]) -> list[Check]:
    summary = result.get("summary", {})
    checks = [Check(name, "failures", "correctness", summary.get("failures"), "==", 0)]
    if _full(result):
        checks.append(Check(name, "inputs", "speed", summary.get("inputs"), ">=", 1_000_000))
    return checks


def _load_time(name: str, result: dict[str, Any]) -> list[Check]:
    summary = result.get("summary", {})
    return [Check(name, "load_s_worst", "speed", summary.get("load_s_worst", summary.get("load_s")), "<", 5)]


def _member_capacity(name: str, result: dict[str, Any]) -> list[Check]:
    """The heartbeat p99 at 10,000 members against the summary's target; no false expiry at any size."""
    summary = result.get("summary", {})
    op, target = _parse_target(summary.get("targets", {}).get("rtt_p99_ms", "< 50"))
    checks = [Check(name, "rtt_p99_ms", "speed", summary.get("rtt_p99_ms"), op, target)]
    checks += [Check(name, f"false_expiries[{row['members']} members]", "correctness", row.get("false_expiries"), "==",
                     0) for row in result.get("rows", [])]
    return checks


def _errors(column: str) -> Rule:
    """Peer benchmarks: groupcoord answered every request without an error (``column`` per row)."""
    def rule(name: str, result: dict[str, Any]) -> list[Check]:
        checks = []
        for row in result.get("rows", []):
            case = ", ".join(str(v) for k, v in row.items() if k in ("durability", "case", "members", "scenario"))
            checks.append(Check(name, f"{column}[{case}]", "correctness", row.get(column), "==", 0))
        return checks
    return rule


def _rebalance_latency(name: str, result: dict[str, Any]) -> list[Check]:
    checks = []
    for row in result.get("rows", []):
        case = f"{row['members']} members, heartbeat {row['heartbeat_ms']} ms"
        checks.append(Check(name, f"member_errors[{case}]", "correctness", row.get("member_errors"), "==", 0))
        if row["members"] == 100 and row["heartbeat_ms"] == 500:
            checks.append(Check(name, f"all_p50_s[{case}]", "speed", row.get("all_p50_s"), "<", 1.5))
    return checks


def _s3_disk(name: str, result: dict[str, Any]) -> list[Check]:
    """The sink writer's tables hold every row written, once (a result recorded before the counts has none)."""
    return [Check(name, f"rows_in_table[{row['store']}, {row['case']}]", "correctness", row["rows_in_table"], "==",
                  row["rows_written"])
            for row in result.get("rows", []) if row.get("rows_written") is not None]


def _simulate(name: str, result: dict[str, Any]) -> list[Check]:
    """No failed schedule on either log (nor in the latest campaign); 10,000 schedules in a full run."""
    checks = [Check(name, f"failed_schedules[{row['log']}]", "correctness", row.get("failed"), "==", 0)
              for row in result.get("rows", [])]
    campaigns = result.get("campaigns") or []
    if campaigns:
        latest = campaigns[-1]
        checks.append(Check(name, f"failed_schedules[campaign {latest.get('commit')}, {latest.get('schedules')}]",
                            "correctness", latest.get("failed"), "==", 0))
    if _full(result):
        checks.append(Check(name, "schedules_ran", "speed", result.get("summary", {}).get("schedules_ran"), ">=",
                            10_000))
    return checks


def _streaming_ingest_latency(name: str, result: dict[str, Any]) -> list[Check]:
    """Every record of the steady stream is in groupcoord's table (throughput runs raise on a wrong count)."""
    expected = result.get("summary", {}).get("records")
    return [Check(name, f"records_in_table[{row['groupcoord_reads']}, {row['master']}]", "correctness",
                  row.get("groupcoord_records"), "==", expected) for row in result.get("rows", [])]


RULES: dict[str, Rule] = {
    "assign": _assign, "assign_cases": _assign, "assign_demo": _assign_demo,
    "assign_first_rebalance": _assign_first_rebalance, "assign_heterogeneous": _assign_heterogeneous,
    "assign_java": _assign_java, "assign_java_rebalance": _assign_java_rebalance, "assign_engines": _assign_engines,
    "commit_throughput": _commit_throughput, "failover": _failover, "fuzz": _fuzz, "load_time": _load_time,
    "member_capacity": _member_capacity, "peer_commits": _errors("groupcoord_errors"),
    "produce": _errors("groupcoord_errors"), "peer_rebalance": _errors("groupcoord_member_errors"),
    "rebalance_latency": _rebalance_latency, "s3_disk": _s3_disk, "simulate": _simulate,
    "streaming_ingest_latency": _streaming_ingest_latency,
}
"""How each benchmark's checks are read off its result. Benchmarks without a rule (peer_ingest, streaming_ingest,
rebalance_soak, ...) check by raising: a sink missing or duplicating records, or a wait past its limit, fails the
benchmark, and ``bench.run`` with it."""


def derive_checks(result: dict[str, Any]) -> list[Check]:
    """The checks of :data:`RULES` for ``result`` (none for a benchmark without a rule, or for a failed run's
    record, whose one check is that it failed)."""
    rule = RULES.get(result["name"])
    return rule(result["name"], result) if rule and not result.get("failed") else []


COMPLETED = "completed"
"""The check of a benchmark whose run raised (:func:`write_failure`)."""


def write_failure(name: str, error: str) -> Path:
    """Replace ``bench/results/<name>.json`` with the record of a run of it that raised ``error``: no figures (the
    previous ones would pass for this run's), and a failed correctness check, so the report opens with it."""
    path = RESULTS_DIR / f"{name}.json"
    try:
        title = json.loads(path.read_text(encoding="utf-8")).get("title", name)
    except (OSError, ValueError):
        title = name
    return write_result(name, title=title, rows=[], notes=f"This benchmark failed in this run: {error}",
                        checks=[Check(name, COMPLETED, "correctness", False, "==", True)], extra={"failed": True})


def checks_of(result: dict[str, Any]) -> list[Check]:
    """A result's checks: the ones it stores, then derived ones it lacks (all of them for a result recorded before
    checks were stored)."""
    stored = [Check.from_json(result["name"], c) for c in result.get("checks", [])]
    return merge_checks(stored, derive_checks(result))


def known_misses(path: Path = KNOWN_MISSES) -> dict[str, str]:
    """``benchmark:check`` -> reason, from the known-misses file (``#`` comments and blank lines skipped)."""
    if not path.exists():
        return {}
    reasons = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            found = KNOWN_MISS_LINE.match(line.strip())
            if found is None:
                raise ValueError(f"{path}:{number}: not `benchmark:check reason`: {line!r}")
            reasons[found["key"]] = found["reason"]
    return reasons
