"""Reading Kafka's message schemas out of the kafka-clients jar that ``make install`` fetched.

The jar carries the JSON files its Java message classes were generated from, as ``common/message/*.json``: JSON with
``//`` line comments (the license and notes on each version). They are read once per process (:func:`load_schemas`)
and are data only: nothing of the jar is run.
"""

from __future__ import annotations

import functools
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from groupcoord.config.jars import JarsMissingError, kafka_jars
from groupcoord.protocol.schemas.errors import SchemaFormatError, SchemasMissingError
from groupcoord.protocol.schemas.model import MessageSpec, parse_message

SCHEMA_FOLDER = "common/message/"
"""Where the schemas sit inside the jar."""

CLIENTS_JAR_PREFIX = "kafka-clients-"
"""The file name start of the jar that holds them (``kafka-clients-4.4.0.jar``)."""


def clients_jar() -> Path:
    """The kafka-clients jar among Kafka's jars (``groupcoord.config.jars.kafka_jars``)."""
    try:
        jars = kafka_jars()
    except JarsMissingError as error:
        raise SchemasMissingError(f"Kafka's message schemas come from the kafka-clients jar, but {error}") from None
    for jar in jars:
        if jar.name.startswith(CLIENTS_JAR_PREFIX):
            return jar
    folder = jars[0].parent
    raise SchemasMissingError(f"no {CLIENTS_JAR_PREFIX}*.jar in {folder} (Kafka's message schemas): run `make install`")


def strip_comments(text: str) -> str:
    """The JSON text without its ``//`` comments (a ``//`` inside a string stays; JSON strings never span lines)."""
    return "\n".join(_strip_line(line) if "//" in line else line for line in text.split("\n"))


def _strip_line(line: str) -> str:
    index = 0
    in_string = False
    while index < len(line):
        char = line[index]
        if in_string:
            if char == "\\":
                index += 2
                continue
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif line.startswith("//", index):
            return line[:index]
        index += 1
    return line


def read_schemas(jar: Path) -> Mapping[str, MessageSpec]:
    """Every schema in ``jar``, by message name."""
    schemas: dict[str, MessageSpec] = {}
    try:
        with zipfile.ZipFile(jar) as archive:
            names = sorted(
                name
                for name in archive.namelist()
                if name.startswith(SCHEMA_FOLDER) and name.endswith(".json") and "/" not in name[len(SCHEMA_FOLDER) :]
            )
            for name in names:
                try:
                    document = json.loads(strip_comments(archive.read(name).decode("utf-8")))
                except ValueError as error:
                    raise SchemaFormatError(f"{jar.name}!{name}: not JSON: {error}") from None
                spec = parse_message(document)
                schemas[spec.name] = spec
    except (OSError, zipfile.BadZipFile) as error:
        raise SchemasMissingError(f"cannot read {jar} ({error}): run `make install`") from None
    if not schemas:
        raise SchemasMissingError(f"{jar} holds no {SCHEMA_FOLDER}*.json: run `make install`")
    return MappingProxyType(schemas)


@functools.cache
def load_schemas() -> Mapping[str, MessageSpec]:
    """Every schema of the installed kafka-clients jar, by message name; read once per process."""
    return read_schemas(clients_jar())
