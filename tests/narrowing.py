"""Typed narrowing for tests: state a test's assumption about a union or optional result, checked at run time.

The coordinator answers with the ``GroupResponse`` union and looks groups up as optionals; a test that knows which
one it gets says so with these helpers, so that mypy sees the precise type and a wrong guess fails loudly.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def expect(value: object, kind: type[T]) -> T:
    """``value``, which the test knows to be a ``kind``."""
    assert isinstance(value, kind), f"expected a {kind.__name__}, got {value!r}"
    return value


def present(value: T | None) -> T:
    """``value``, which the test knows not to be ``None``."""
    assert value is not None
    return value
