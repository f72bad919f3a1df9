"""The package's layers (issue 18, docs/architecture.md): a package imports only from packages below it or from its
own row, and no module imports itself back through a chain of module-level imports.

Imports are read from the source (``ast``), including imports inside functions (a lazy import is still a
dependency) and under ``TYPE_CHECKING``. A failure names the offending import, file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "groupcoord"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("protocol", "config", "state_root", "state_format", "plans", "storage", "security"),
    ("group", "topics"),
    ("coordinator",),
    ("log",),
    ("state",),
    ("runtime",),
    ("server", "member"),
    ("metrics",),
    ("host",),
    ("assignors",),
    ("assignment",),
    ("source",),
    ("sink",),
    ("spark",),
    ("ingest", "admin", "devbroker", "cluster"),
    ("cli", "__main__"),
)
"""Bottom to top. ``plans`` (Spark's internals behind one interface, with its fallback) imports nothing of groupcoord,
so it sits in the bottom row, below the assignors that use it; so does ``storage`` (the log layer under the record
log and the topic logs), below both of its users, and ``security`` (the SASL mechanisms, credentials, principals
and TLS contexts: pure, used by the coordinator's records, the endpoint and the clients). ``metrics`` reads the
core, the log, the state tables, the topics and the server's dispatcher, and the host (which starts it) imports it,
so it sits between the two; ``admin`` shares its consumer-lag families. ``sim`` is a test and bench harness: it may
import anything, and nothing in the package imports it. The root package's ``__init__`` (``__version__``) is in the
bottom row."""

HARNESS = "sim"


def layer_of(package: str) -> int:
    """The row of a top-level package of groupcoord; -1 for one that is in no row."""
    for index, row in enumerate(LAYERS):
        if package in row:
            return index
    return -1


@dataclass(frozen=True)
class Import:
    """One ``groupcoord`` import: where it is and what it names."""

    source: str  # dotted module path below groupcoord, e.g. "host.background"
    target: str  # dotted module path below groupcoord, e.g. "assignment.runner"
    line: int
    top_level: bool

    def __str__(self) -> str:
        return f"groupcoord/{self.source.replace('.', '/')}.py:{self.line} imports groupcoord.{self.target}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _parse(path: Path) -> ast.Module:
    """``ast.parse`` of ``path``, once more if CPython 3.11's shared AST recursion counter was raced: a thread of an
    earlier test compiling a module at the same moment made it raise "SystemError: AST constructor recursion depth
    mismatch" (a CPython 3.11 fault with threads, python/cpython gh-106905) in a run under a CPU hog."""
    text = path.read_text()
    try:
        return ast.parse(text, filename=str(path))
    except SystemError:
        return ast.parse(text, filename=str(path))


def imports() -> Iterator[Import]:
    """Every import of a groupcoord module by a groupcoord module."""
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _module_name(path)
        tree = _parse(path)
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif node.module and node.level == 0:
                names = [node.module + "." + alias.name for alias in node.names]
            for name in names:
                if name.startswith("groupcoord."):
                    yield Import(source, name.removeprefix("groupcoord."), node.lineno, id(node) in top)


PACKAGES = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} | {
    p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}


def _package(module: str) -> str:
    """The row unit of a module: its top-level package (or ``protocol``'s row for a name of the root
    ``__init__``)."""
    top = module.split(".", 1)[0]
    return top if top in PACKAGES else "protocol"


def test_every_import_goes_down_the_layers_or_stays_in_its_row() -> None:
    """A package imports only from packages below it, or from its own row; nothing outside sim imports sim."""
    wrong = []
    for imp in imports():
        source, target = _package(imp.source), _package(imp.target)
        if source in (target, HARNESS):
            continue
        if -1 in (layer_of(source), layer_of(target)):
            wrong.append(f"{imp}: groupcoord/{source if layer_of(source) < 0 else target} is in no layer")
        elif target == HARNESS:
            wrong.append(f"{imp}: only tests and bench may import the simulation harness")
        elif layer_of(target) > layer_of(source):
            wrong.append(f"{imp}: layer {layer_of(target) + 1} ({target}) is above layer {layer_of(source) + 1}")
    assert not wrong, "imports that run up the layers:\n" + "\n".join(wrong)


def _resolve(target: str, modules: set[str]) -> str | None:
    """The module ``target`` names (``a.b.name`` -> ``a.b`` when ``name`` is not a module)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def test_no_module_level_import_cycle() -> None:
    """Module-level imports form no cycle (a lazy import inside a function does not count here)."""
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports():
        target = _resolve(imp.target, modules)
        if imp.top_level and target is not None and target != imp.source and not imp.source.startswith(target + "."):
            edges[imp.source].add(target)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for nxt in sorted(edges[module]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[module] = 2

    for module in sorted(modules):
        if module not in state:
            visit(module)
    assert not cycles, "module-level import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
