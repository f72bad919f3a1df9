"""No document quotes a figure that ``docs/benchmarks.md`` does not show.

A quoted benchmark figure in the README or ``jobs/README.md`` is followed by one or more markers naming where it comes
from: ``0.67x <!-- figure: streaming_ingest groupcoord_reads=kafka master=local[4,4] records_per_s_ratio -->`` is
the ``records_per_s_ratio`` of the row of ``bench/results/streaming_ingest.json`` whose ``groupcoord_reads`` is
``kafka`` and ``master`` is ``local[4,4]``; with no ``key=value`` filter the key is the summary's. The quote must
equal the figure rounded to the quote's decimals, every ratio quoted (``0.67x``, ``0.28-0.33x``) must carry a
marker, and ``docs/benchmarks.md`` must be what ``bench.report`` renders from the same results.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench import report
from bench.results_io import RESULTS_DIR

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "jobs/README.md")
MARKER = re.compile(r"<!-- figure: (?P<spec>[^>]*?) -->")
QUOTE = re.compile(r"(?P<figure>\d[\d,]*(?:\.\d+)?)(?:x|%| ms| s)?\s*(?P<markers>(?:<!-- figure: [^>]*? -->)+)")
RATIO = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?x(?!\w)")


def resolve(spec: str, results_dir: Path = RESULTS_DIR) -> Any:
    """The figure a marker names: ``NAME [KEY=VALUE ...] FIELD``."""
    name, *filters, field = spec.split()
    result = json.loads((results_dir / f"{name}.json").read_text(encoding="utf-8"))
    if not filters:
        return result["summary"][field]
    wanted = dict(f.split("=", 1) for f in filters)
    rows = [row for row in result["rows"] if all(str(row.get(k)) == v for k, v in wanted.items())]
    assert len(rows) == 1, f"{spec}: {len(rows)} rows match"
    return rows[0][field]


def matches(quoted: str, value: Any) -> bool:
    """``quoted`` is ``value`` rounded to the quote's decimals."""
    decimals = len(quoted.split(".", 1)[1]) if "." in quoted else 0
    return isinstance(value, int | float) and round(float(value), decimals) == float(quoted.replace(",", ""))


def quotes(text: str) -> list[tuple[str, str]]:
    """Each (quoted figure, marker spec) pair of ``text``."""
    return [(q["figure"], m["spec"]) for q in QUOTE.finditer(text) for m in MARKER.finditer(q["markers"])]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_quoted_figure_is_the_recorded_one(document: str) -> None:
    text = (REPO / document).read_text(encoding="utf-8")
    wrong = [(quoted, spec, resolve(spec)) for quoted, spec in quotes(text) if not matches(quoted, resolve(spec))]
    assert not wrong, f"{document} quotes figures bench/results/ does not hold: {wrong}"
    assert len(MARKER.findall(text)) == len(quotes(text)), f"{document}: a marker follows no figure"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_quoted_ratio_names_its_result(document: str) -> None:
    text = (REPO / document).read_text(encoding="utf-8")
    bare = [m.group() for m in RATIO.finditer(text) if not MARKER.match(text, _skip_space(text, m.end()))]
    assert not bare, f"{document} quotes ratios without a `<!-- figure: ... -->` marker: {bare}"


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def test_docs_benchmarks_md_is_rendered_from_the_committed_results() -> None:
    """So a figure in bench/results/ is a figure docs/benchmarks.md shows (regenerate: python -m bench.report)."""
    assert report.DOC.read_text(encoding="utf-8") == report.render()


def test_the_checks_catch_a_stale_quote(tmp_path: Path) -> None:
    result = {"name": "peer_ingest", "summary": {"records": 100_000}, "rows": [
        {"master": "local[4,4]", "warm_records_per_s_ratio": 0.469},
        {"master": "local[2]", "warm_records_per_s_ratio": 0.672}]}
    (tmp_path / "peer_ingest.json").write_text(json.dumps(result), encoding="utf-8")
    text = ("reading 1,000,000 <!-- figure: peer_ingest records --> records it reached "
            "0.33x <!-- figure: peer_ingest master=local[4,4] warm_records_per_s_ratio -->, and 0.67x "
            "<!-- figure: peer_ingest master=local[2] warm_records_per_s_ratio --> on local[2], once 0.83x.")

    found = [(quoted, matches(quoted, resolve(spec, tmp_path))) for quoted, spec in quotes(text)]

    assert found == [("1,000,000", False), ("0.33", False), ("0.67", True)]
    assert [m.group() for m in RATIO.finditer(text)
            if not MARKER.match(text, _skip_space(text, m.end()))] == ["0.83x"]
