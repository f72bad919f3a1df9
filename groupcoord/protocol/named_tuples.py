"""Building many named tuples from rows without a Python call each (the offset-commit path's per-partition types).

``NamedTuple._make`` is a Python classmethod: mapped over thousands of rows it costs a Python call per row.
:func:`from_rows` returns ``tuple.__new__`` bound to the class instead, which ``map`` calls in C.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T", bound=tuple[Any, ...])


def from_rows(cls: type[T]) -> Callable[[Iterable[Any]], T]:
    """A builder of ``cls`` (a named tuple class) from one row holding its fields in order, all of them: unlike
    ``cls._make`` it does not check the row's length, so give it rows of exactly ``len(cls._fields)`` values."""
    build: Callable[[Iterable[Any]], T] = functools.partial(tuple.__new__, cls)
    return build


__all__ = ["from_rows"]
