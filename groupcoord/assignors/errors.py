"""The one exception the assignors raise for bad input."""

from __future__ import annotations


class AssignorInputError(ValueError):
    """An input DataFrame is unusable: a missing column, a column of the wrong type, or a bad value.

    Schema problems are raised by ``assign`` itself. Value problems (duplicate members, negative or duplicate
    partitions) can only be seen in the data, so they are raised inside the Spark plan when the output is evaluated;
    Spark then reports them as a ``USER_RAISED_EXCEPTION`` whose message starts with ``AssignorInputError:``.
    """
