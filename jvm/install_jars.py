"""Fetch the JVM jars with Maven into ``<venv>/jars/{spark,kafka}`` (run by ``make install``).

Two dependency sets, never mixed on one classpath:

- ``jvm/spark/pom.xml``: Delta Spark and Spark's Kafka source, added to pyspark's own jars. Every jar pyspark already
  ships (any version of the same artifact) is left out, so Spark's classpath holds one copy of each library.
- ``jvm/kafka/pom.xml``: Apache Kafka's broker, clients and group coordinator, for the dev broker, the parity suite
  and the Java bench harness.
- ``jvm/s3/pom.xml``: Hadoop's S3A filesystem (``hadoop-aws``, with the AWS SDK bundle: about 600 MB) and Spark's
  cloud checkpoint file manager, added to Spark's classpath only for a state root or a table on S3. Not fetched by
  ``make install``: ``python jvm/install_jars.py s3`` fetches it, and :func:`groupcoord.config.jars.s3_jars` runs
  that on first use (the S3 tests' Spark session, ``bin/spark-submit`` with an ``s3://`` or ``s3a://`` argument).

``python jvm/install_jars.py [SET ...]`` fetches the sets named (default: ``spark kafka``). Maven follows the
machine's settings (mirrors, proxies). A set is fetched again only when its pom changed.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
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


SETS = ("spark", "kafka", "s3")
DEFAULT_SETS = ("spark", "kafka")


def main(argv: list[str] | None = None) -> int:
    """Fetch the sets named in ``argv`` (default :data:`DEFAULT_SETS`) into ``sys.prefix/jars`` (the venv running this
    script), or ``$GROUPCOORD_JARS``."""
    import os

    names = list(argv if argv is not None else sys.argv[1:]) or list(DEFAULT_SETS)
    unknown = [name for name in names if name not in SETS]
    if unknown:
        print(f"install_jars: unknown set {unknown[0]!r} (the sets: {', '.join(SETS)})", file=sys.stderr)
        return 2
    root = Path(os.environ.get("GROUPCOORD_JARS") or Path(sys.prefix) / "jars")
    for name in names:
        started = time.monotonic()
        # the Spark-side sets leave out what pyspark ships; the Kafka set is a classpath of its own
        count = fetch(name, root / name, skip=set() if name == "kafka" else _pyspark_artifacts())
        size = sum(jar.stat().st_size for jar in (root / name).glob("*.jar"))
        print(f"jvm jars: {count} for {name} in {root / name} ({size / 1e6:.0f} MB, "
              f"{time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
