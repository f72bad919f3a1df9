"""Fetch the JVM jars with Maven into ``<venv>/jars/{spark,kafka}`` (run by ``make install``).

Two dependency sets, never mixed on one classpath:

- ``jvm/spark/pom.xml``: Delta Spark and Spark's Kafka source, added to pyspark's own jars. Every jar pyspark already
  ships (any version of the same artifact) is left out, so Spark's classpath holds one copy of each library.
- ``jvm/kafka/pom.xml``: Apache Kafka's broker, clients and group coordinator, for the dev broker, the parity suite
  and the Java bench harness.

Maven follows the machine's settings (mirrors, proxies). A set is fetched again only when its pom changed.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

JVM_DIR = Path(__file__).resolve().parent
_VERSION_SUFFIX = re.compile(r"-\d[\w.\-]*\.jar$")


def artifact_name(jar: str) -> str:
    """``delta-spark_2.13-4.4.0.jar`` -> ``delta-spark_2.13``: the jar's name without its version."""
    return _VERSION_SUFFIX.sub("", jar)


def _pyspark_artifacts() -> set[str]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    return {artifact_name(j.name) for j in jars.glob("*.jar")}


def fetch(name: str, target: Path, *, skip: set[str]) -> int:
    """Copy the runtime dependencies of ``jvm/<name>/pom.xml`` into ``target``; returns the number of jars."""
    pom = JVM_DIR / name / "pom.xml"
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()
    stamp = target / ".pom-sha256"
    if stamp.is_file() and stamp.read_text() == digest:
        return len(list(target.glob("*.jar")))
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(["mvn", "-q", "-B", "--no-transfer-progress", "-Dstyle.color=never", "-f", str(pom),
                        "dependency:copy-dependencies", f"-DoutputDirectory={scratch}",
                        "-DincludeScope=runtime"], check=True)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for jar in sorted(Path(scratch).glob("*.jar")):
            if artifact_name(jar.name) not in skip:
                shutil.copy2(jar, target / jar.name)
    stamp.write_text(digest)
    return len(list(target.glob("*.jar")))


def main() -> int:
    """Fetch both sets into ``sys.prefix/jars`` (the venv running this script)."""
    root = Path(sys.prefix) / "jars"
    spark = fetch("spark", root / "spark", skip=_pyspark_artifacts())
    kafka = fetch("kafka", root / "kafka", skip=set())
    print(f"jvm jars: {spark} for Spark in {root / 'spark'}, {kafka} for Kafka in {root / 'kafka'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
