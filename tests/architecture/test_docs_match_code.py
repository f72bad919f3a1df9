"""The docs cannot drift from the code (issue 27): the layer tables of ``docs/architecture.md`` and the README are the
layer test's table, every package of groupcoord is in it, and every path the docs cite exists in this repository."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

from tests.architecture.test_layers import HARNESS, LAYERS, PACKAGE

REPO = PACKAGE.parent
LAYER_TABLES = {"README.md": "## Architecture map", "docs/architecture.md": "## The layers, bottom to top"}
"""Each document with a layer table, and the heading its table follows."""
DOCS = sorted([REPO / "README.md", REPO / "jobs" / "README.md", *(REPO / "docs").glob("*.md")])
CITED = re.compile(r"`([A-Za-z0-9_.\-/]+)`")
FILE_LIKE = re.compile(r"(/|\.(py|md|json|txt|toml|xml|java|conf|properties|sh|js|go))$|/")
NOT_IN_THE_REPOSITORY = {
    "kafka-consumer-groups.sh": "Kafka's own tool, whose conventions the CLI follows",
    "kafka-acls.sh": "Kafka's own tool, whose options `groupcoord acls` follows and which manages serve's ACLs",
    "state/acls": "a table inside a state root",
    "./var/demo/": "what make run creates (gitignored)",
    "_groupcoord/format.json": "a file inside a state root",
    "var/kafka/broker.log": "the log the development broker writes under ./var",
    "server.properties": "the broker configuration shipped in Kafka's own config folder",
}
"""Cited names that are not files of this repository, each with the reason."""
GENERATED = (".venv/", "var/", "./var/")
"""Folders that ``make install`` and runs create: what the docs cite in them exists only after a run."""


def layer_rows(document: str) -> list[set[str]]:
    """The packages of each row of ``document``'s layer table, normalised to the layer test's names."""
    text = (REPO / document).read_text(encoding="utf-8")
    table = text[text.index(LAYER_TABLES[document]):]
    rows: list[set[str]] = []
    for line in table.splitlines():
        match = re.match(r"\| (\d+) \| ([^|]+) \|", line)
        if match is None:
            if rows and not line.startswith("|"):
                break
            continue
        assert int(match.group(1)) == len(rows) + 1, f"{document}: row {match.group(1)} is out of order"
        rows.append({re.sub(r"(/|\.py)$", "", name) for name in re.findall(r"`([^`]+)`", match.group(2))})
    return rows


@pytest.mark.parametrize("document", sorted(LAYER_TABLES))
def test_the_layer_table_is_the_layer_tests(document: str) -> None:
    assert layer_rows(document) == [set(row) for row in LAYERS]


def test_every_package_is_in_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} | {
        p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    listed = {name for row in LAYERS for name in row} | {HARNESS}
    assert packages - listed == set(), "packages in no row of the layer table"


def _exists(cited: str, document: Path) -> bool:
    name = cited.rstrip("/")
    if "/" not in name:  # a bare file or folder name: some file or folder of the repository has it
        return any(path.name == name for path in _repository_files())
    bases = (REPO, PACKAGE, REPO / "tests", document.parent, PACKAGE / "assignors")
    return any((base / cited).exists() for base in bases)


@functools.cache
def _repository_files() -> tuple[Path, ...]:
    """Every file and folder of the repository, without the venv, caches and what runs leave behind."""
    skip = {".venv", ".git", "node_modules", "var", ".mypy_cache", ".ruff_cache", ".pytest_cache", "__pycache__"}
    found: list[Path] = []
    for folder, names, files in os.walk(REPO):
        names[:] = [n for n in names if n not in skip]
        found.extend(Path(folder) / n for n in [*names, *files])
    return tuple(found)


def test_every_path_the_docs_cite_exists() -> None:
    wrong = []
    for document in DOCS:
        for cited in CITED.findall(document.read_text(encoding="utf-8")):
            if not FILE_LIKE.search(cited.strip("/")) or "://" in cited or cited in NOT_IN_THE_REPOSITORY:
                continue
            if cited.startswith(GENERATED):
                continue
            if cited.startswith(("../", "/")):
                wrong.append(f"{document.relative_to(REPO)} cites {cited}, outside the repository")
            elif not _exists(cited, document):
                wrong.append(f"{document.relative_to(REPO)} cites {cited}, which does not exist")
    assert not wrong, "\n".join(wrong)
