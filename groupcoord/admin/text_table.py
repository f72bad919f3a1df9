"""Plain-text tables laid out as Kafka's tools do: left-aligned columns, one space apart, ``-`` for no value."""

from __future__ import annotations

from collections.abc import Sequence

MISSING = "-"


def cell(value: object) -> str:
    """A value as table text: ``-`` for ``None`` or an empty string."""
    if value is None:
        return MISSING
    text = str(value)
    return text if text else MISSING


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """``headers`` and ``rows`` as aligned lines (the last column is not padded, so lines have no trailing blanks)."""
    texts = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in texts)]) for i, h in enumerate(headers)]
    lines = []
    for row in [list(headers), *texts]:
        padded = [text.ljust(width) for text, width in zip(row[:-1], widths[:-1], strict=True)]
        lines.append(" ".join([*padded, row[-1]]))
    return "\n".join(lines)
