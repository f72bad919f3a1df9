"""``pip install .`` carries every runtime dependency groupcoord imports: what a packed venv shipped to a cluster's
executors (README, "Running on a cluster") holds. Each third-party module imported anywhere in the package (``ast``,
lazy imports included) must come from a distribution in the closure of ``pyproject.toml``'s dependencies, or of its
``plot`` extra for the optional lag plot (matplotlib, imported only for ``--plot``)."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OPTIONAL_EXTRAS = ("plot",)
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install, transitively (their markers' extras followed as named), by the
    installed metadata of this venv."""
    found: set[str] = set()
    todo = [(r, ()) for r in requirements]
    while todo:
        requirement, _ = todo.pop()
        head, _, marker = requirement.partition(";")
        match = _NAME.match(head.strip())
        assert match, requirement
        name, extras = _normal(match.group(1)), [e.strip() for e in (match.group(2) or "").split(",") if e.strip()]
        if "extra ==" in marker:
            continue  # reached only through the extras handled below
        key = name + ("[" + ",".join(sorted(extras)) + "]" if extras else "")
        if key in found:
            continue
        found.add(key)
        found.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:  # a dependency of another platform or Python (its marker is false)
            continue
        for dependency in requires:
            dep_head, _, dep_marker = dependency.partition(";")
            wanted = [e for e in extras if re.search(rf"extra\s*==\s*['\"]{re.escape(e)}['\"]", dep_marker)]
            if "extra ==" not in dep_marker or wanted:
                todo.append((dep_head.split(";")[0].strip(), ()))
    return {name for name in found if "[" not in name}


def imported_top_level_modules() -> set[str]:
    """The top-level modules imported anywhere in groupcoord (and the jobs)."""
    modules: set[str] = set()
    for path in [*(REPO / "groupcoord").rglob("*.py"), *(REPO / "jobs").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module.split(".")[0])
    return modules


def test_pip_install_brings_every_module_groupcoord_imports() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    required = closure(project["dependencies"])
    optional = closure([r for extra in OPTIONAL_EXTRAS for r in project["optional-dependencies"][extra]])
    providers = metadata.packages_distributions()
    third_party = sorted(m for m in imported_top_level_modules()
                         if m not in sys.stdlib_module_names and m not in ("groupcoord", "__future__"))
    missing = {m: providers.get(m) for m in third_party
               if not {_normal(d) for d in providers.get(m, [])} & (required | optional)}
    assert missing == {}, f"imported but not installed by pip install . (module: its distributions): {missing}"
