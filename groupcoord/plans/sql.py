"""Assignor frames written as one SQL text each: one parse and one analysis instead of dozens of py4j round trips.

Every DataFrame call (``F.col``, ``withColumn``, an operator on a Column, even each element of a column list) is a
py4j round trip, and each DataFrame call re-analyses its plan; a frame built from a few dozen of them costs tens of
milliseconds before Spark plans anything. :func:`query` sends a whole ``SELECT`` at once, the frames it reads named
as ``{name}`` placeholders (registered as temporary views with unique names for the duration of the call; the
returned frame keeps their resolved plans).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame


def query(text: str, **frames: DataFrame) -> DataFrame:
    """Run ``text`` (``{name}`` stands for the frame ``frames[name]``) as one ``spark.sql`` call; lazy."""
    session = next(iter(frames.values())).sparkSession
    return session.sql(text, None, **frames)


def quoted(name: str) -> str:
    """``name`` as a SQL identifier (backquoted)."""
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Subquery:
    """A ``SELECT`` not made into a frame yet: its text (``{name}`` placeholders) and the frames they stand for.

    A query that reads it nests the text (:meth:`nested_in`): one parse and no temporary view of its own.
    """

    text: str
    frames: Mapping[str, DataFrame]

    def frame(self) -> DataFrame:
        """The subquery as a frame of its own."""
        return query(self.text, **self.frames)

    def nested_in(self, text: str, name: str, **frames: DataFrame) -> DataFrame:
        """Run ``text``, where ``{name}`` reads this subquery and the other placeholders stand for ``frames``."""
        clashes = [key for key in frames.keys() & self.frames.keys() if frames[key] is not self.frames[key]]
        if clashes:
            raise ValueError(f"placeholder(s) {', '.join(sorted(clashes))} stand for two different frames")
        return query(text.replace("{" + name + "}", f"({self.text})"), **{**self.frames, **frames})
