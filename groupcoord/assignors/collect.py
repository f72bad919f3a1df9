"""Collecting an assignment, with bad input values reported as :class:`AssignorInputError`.

Value checks (duplicate members, negative or duplicate partitions, negative weights) run inside the assignment's own
Spark job: checking them up front would cost a job per call. Spark reports such a failure as a
``USER_RAISED_EXCEPTION`` (or a Java exception when several tasks fail at once) whose text carries our message;
:func:`to_arrow` finds it and raises a plain ``AssignorInputError`` with that one line instead.
"""

from __future__ import annotations

import re

import pyarrow as pa
from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame

from groupcoord.assignors.errors import AssignorInputError

_PREFIX = "AssignorInputError: "
_MESSAGE = re.compile(re.escape(_PREFIX) + r"([^\n\r]*?)(?:\.?\s*SQLSTATE:|[\n\r]|$)")


def input_error_message(error: BaseException) -> str | None:
    """The assignor's own message inside a Spark failure, or None when ``error`` is about something else."""
    match = _MESSAGE.search(str(error))
    return match.group(1).strip().rstrip('".') if match else None


def to_arrow(frame: DataFrame) -> pa.Table:
    """``frame.toArrow()``, raising :class:`AssignorInputError` (not a Spark error) for bad input values."""
    try:
        return frame.toArrow()
    except (PySparkException, Py4JJavaError) as exc:
        message = input_error_message(exc)
        if message is None:
            raise
        raise AssignorInputError(message) from None
