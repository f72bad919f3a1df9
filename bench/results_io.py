"""Writing one benchmark's results, with the machine, the date and the exact command."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import sys
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


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
) -> Path:
    """Write ``bench/results/<name>.json``.

    ``rows`` is a table (one dict per case, same keys in each); ``summary`` holds headline figures and targets;
    ``command`` defaults to the command line that ran this process.
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
    }
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    return path
