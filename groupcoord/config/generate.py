"""Render ``conf/groupcoord-defaults.conf`` from the key registry: ``python -m groupcoord.config.generate``."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from groupcoord.config import keys as _keys  # noqa: F401  (fills the registry)
from groupcoord.config.registry import REGISTRY

HEADER = """\
# groupcoord defaults, in spark-defaults.conf format.
# GENERATED from groupcoord/config/keys.py by `python -m groupcoord.config.generate`; do not edit by hand.
# Copy the lines you want to change into your own file and pass it with --conf-file, or set them as Spark conf.
"""


def render_defaults() -> str:
    """The text of the defaults file: every key, its documentation, and its default (commented out if unset)."""
    parts = [HEADER]
    for key in REGISTRY:
        doc = textwrap.fill(key.doc, width=116, initial_indent="# ", subsequent_indent="# ")
        value = _render_value(key.default)
        line = f"{key.full_name} {value}" if key.default is not None else f"# {key.full_name} <unset>"
        parts.append(f"\n{doc}\n{line}\n")
    return "".join(parts)


def _render_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    """Write the defaults file to the path in ``argv`` (default ``conf/groupcoord-defaults.conf``)."""
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0] if args else "conf/groupcoord-defaults.conf")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_defaults(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
