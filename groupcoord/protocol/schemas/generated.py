"""What the generated readers and writers share: the exception that sends a value back to the interpretive codec,
and the builder of a generated function's source.

:mod:`~groupcoord.protocol.schemas.generated_reader` and :mod:`~groupcoord.protocol.schemas.generated_writer` write
one straight-line Python function per struct and version for the regular case, and step aside with
:class:`Irregular` for everything else, so that the interpretive codec (:mod:`~groupcoord.protocol.schemas.codec`)
gives the answer, value or :class:`~groupcoord.protocol.schemas.errors.CodecError`, whenever the case is not plain.
"""

from __future__ import annotations

import itertools
from typing import Any


class Irregular(Exception):
    """The bytes or the value are not in the regular form a generated function takes: use the interpretive codec."""


class FunctionSource:
    """The source lines of one generated function, and its namespace: constants and helpers go in by name."""

    def __init__(self, **helpers: Any) -> None:
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {"Irregular": Irregular, **helpers}
        self._names = itertools.count()

    def variable(self) -> str:
        """A fresh local variable name."""
        return f"v{next(self._names)}"

    def constant(self, value: Any) -> str:
        """The name under which ``value`` is in the function's namespace."""
        name = f"c{next(self._names)}"
        self.namespace[name] = value
        return name

    def emit(self, indent: str, *lines: str) -> None:
        """Append ``lines`` at ``indent``."""
        self.lines += [indent + line for line in lines]

    def compile(self, function: str, label: str) -> Any:
        """The function called ``function`` that the lines define (``label`` names it in tracebacks)."""
        exec(compile("\n".join(self.lines), f"<{label}>", "exec"), self.namespace)
        return self.namespace[function]
