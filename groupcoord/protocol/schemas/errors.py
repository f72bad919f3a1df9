"""The three ways the schema codec fails: the jar is missing, a schema file cannot be read, or bytes or a value do
not fit a message's schema.

:class:`CodecError` is the one error of encoding and decoding. Its text is one line naming the message, the version
and the field path (``Topics[1].Partitions[0].CommittedOffset``), then the problem, so a bad frame is diagnosed from
the log line alone.
"""

from __future__ import annotations

from groupcoord.config.jars import JarsMissingError


class SchemasMissingError(JarsMissingError):
    """Kafka's message schemas are not on this machine: the ``kafka-clients`` jar was not fetched (``make install``)."""


class SchemaFormatError(RuntimeError):
    """A schema file of the jar does not follow the format this codec interprets (a newer Kafka's format, or a
    broken jar)."""


class CodecError(ValueError):
    """Bytes or a value that do not fit a message's schema at a version, or an API or version the schemas lack.

    ``message`` is the schema's name (``JoinGroupRequest``, ``RequestHeader``), ``version`` the message version (None
    when unknown), ``field`` the dotted path of the offending field (None for the message as a whole) and
    ``problem`` what is wrong.
    """

    def __init__(self, message: str, version: int | None, field: str | None, problem: str) -> None:
        self.message = message
        self.version = version
        self.field = field
        self.problem = problem
        where = message if version is None else f"{message} v{version}"
        if field:
            where = f"{where} field {field}"
        super().__init__(f"{where}: {problem}")


class FieldProblem(Exception):
    """Internal: a problem found deep in a struct; each enclosing field adds its name on the way out, and the
    message's entry point turns it into a :class:`CodecError`."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []

    def at(self, step: str) -> FieldProblem:
        """Record one enclosing step (a field name, or ``[index]`` of an array), innermost first."""
        self.path.append(step)
        return self

    def field_path(self) -> str | None:
        """The dotted path from the message down to the offending field."""
        if not self.path:
            return None
        text = ""
        for step in reversed(self.path):
            text += step if step.startswith("[") or not text else f".{step}"
        return text
