"""Compiling a small Java program against Kafka's jars (``.venv/jars/kafka``), once per version of its source.

Benchmarks and tests run Kafka's own Java code beside groupcoord (its assignors, its consumer and admin client):
:func:`compiled_classes` builds a single-file program into ``<build>/<hash of the source>`` and reuses that folder
while the source is unchanged. Each build goes to a fresh folder that is renamed into place, so concurrent callers
never see half a build.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from groupcoord.config.jars import kafka_classpath


def java_tool(name: str) -> str:
    """``$JAVA_HOME/bin/<name>`` when set, else ``<name>`` on the PATH (``java``, ``javac``)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: install a JDK (17+) or set JAVA_HOME")
    return found


def compiled_classes(source: Path, build: Path) -> Path:
    """The folder holding ``source`` compiled against Kafka's jars, compiling it first when this version of the
    source is not built yet. A compile error raises ``RuntimeError`` with javac's message."""
    target = build / hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    if (target / f"{source.stem}.class").exists():
        return target
    build.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=build, prefix=".build-"))
    done = subprocess.run([java_tool("javac"), "-Xlint:-removal", "-d", str(staging), "-cp", kafka_classpath(),
                           str(source)], capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"javac {source.name} failed:\n{done.stderr}")
    try:
        staging.rename(target)
    except OSError:  # another process built the same source first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def java_command(source: Path, build: Path, *args: str, jvm_options: tuple[str, ...] = ()) -> list[str]:
    """The command running the compiled ``source``'s main class with ``args`` on Kafka's jars."""
    classes = compiled_classes(source, build)
    return [java_tool("java"), *jvm_options, "-cp", os.pathsep.join([str(classes), kafka_classpath()]), source.stem,
            *args]
