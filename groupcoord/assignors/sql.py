"""Assignor frames written as one SQL text each: one parse and one analysis instead of dozens of py4j round trips.

Every DataFrame call (``F.col``, ``withColumn``, an operator on a Column, even each element of a column list) is a
py4j round trip, and each DataFrame call re-analyses its plan; a frame built from a few dozen of them costs tens of
milliseconds before Spark plans anything. :func:`query` sends a whole ``SELECT`` at once, the frames it reads named
as ``{name}`` placeholders (registered as temporary views with unique names for the duration of the call; the
returned frame keeps their resolved plans).
"""

from __future__ import annotations

from pyspark.sql import DataFrame


def query(text: str, **frames: DataFrame) -> DataFrame:
    """Run ``text`` (``{name}`` stands for the frame ``frames[name]``) as one ``spark.sql`` call; lazy."""
    session = next(iter(frames.values())).sparkSession
    return session.sql(text, None, **frames)


def quoted(name: str) -> str:
    """``name`` as a SQL identifier (backquoted)."""
    return "`" + name.replace("`", "``") + "`"
