"""Where ``make install`` put the JVM jars, and the two classpaths built from them.

``jvm/install_jars.py`` fetches two sets with Maven into ``<venv>/jars``: ``spark`` (Delta Spark, Spark's Kafka source
and their dependencies that pyspark does not ship) and ``kafka`` (Apache Kafka's broker, clients and group
coordinator). The two are never put on one classpath. ``$GROUPCOORD_JARS`` points somewhere else (a folder holding
``spark/`` and ``kafka/``).

A third set, ``s3`` (Hadoop's S3A filesystem with the AWS SDK bundle, about 690 MB, and Spark's cloud checkpoint file
manager), joins Spark's classpath only where a state root or a table is on S3. It is fetched on first use
(:func:`s3_jars`: ``jvm/install_jars.py s3``, about 30 s on a fast link), not by ``make install``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from pathlib import Path

JARS_ENV = "GROUPCOORD_JARS"

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


class JarsMissingError(RuntimeError):
    """The JVM jars were not fetched (run ``make install``)."""


def jars_root() -> Path:
    """The folder holding ``spark/`` and ``kafka/``: ``$GROUPCOORD_JARS``, else ``<sys.prefix>/jars``."""
    configured = os.environ.get(JARS_ENV)
    return Path(configured) if configured else Path(sys.prefix) / "jars"


def _jars(name: str) -> list[Path]:
    folder = jars_root() / name
    jars = sorted(folder.glob("*.jar"))
    if not jars:
        raise JarsMissingError(f"no JVM jars in {folder}: run `make install` (or set ${JARS_ENV})")
    return jars


def spark_jars() -> list[Path]:
    """The jars Spark needs beside pyspark's own: Delta and the Kafka source."""
    return _jars("spark")


def kafka_jars() -> list[Path]:
    """Apache Kafka's jars: the broker, its clients and its group coordinator (never on Spark's classpath)."""
    return _jars("kafka")


INSTALL_SCRIPT = Path(__file__).resolve().parents[2] / "jvm" / "install_jars.py"
"""The checkout's jar installer (absent from an installed wheel)."""


def s3_jars(*, fetch: bool = True) -> list[Path]:
    """The S3 set (``hadoop-aws``, the AWS SDK bundle, ``spark-hadoop-cloud``), fetched with Maven first when it is
    missing and ``fetch`` (one process at a time: a lock file beside the set)."""
    folder = jars_root() / "s3"
    jars = sorted(folder.glob("*.jar"))
    if jars or not fetch:
        if not jars:
            raise JarsMissingError(f"no S3 jars in {folder}: run `python jvm/install_jars.py s3`")
        return jars
    if not INSTALL_SCRIPT.is_file():
        raise JarsMissingError(f"no S3 jars in {folder}, and no jvm/install_jars.py to fetch them with: fetch "
                               f"org.apache.hadoop:hadoop-aws:3.5.0 and its dependencies into {folder}")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / ".s3.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not any(folder.glob("*.jar")):
                done = subprocess.run([sys.executable, str(INSTALL_SCRIPT), "s3"], capture_output=True, text=True,
                                      env={**os.environ, JARS_ENV: str(jars_root())}, check=False)
                if done.returncode != 0:
                    last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
                    raise JarsMissingError(f"fetching the S3 jars failed ({done.returncode}): {last[0]}")
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_UN)
    return _jars("s3")


def s3_jars_setting(*, fetch: bool = True) -> str:
    """The comma-separated S3 jars, to add to ``spark.jars`` (``--jars``)."""
    return ",".join(str(jar) for jar in s3_jars(fetch=fetch))


def s3_classpath(*, fetch: bool = True) -> str:
    """The S3 jars as a classpath (``spark.driver.extraClassPath`` of a local master: Spark copies every jar of
    ``spark.jars`` into each executor's directory, the driver's own in local mode, and the AWS SDK bundle is 686 MB)."""
    return os.pathsep.join(str(jar) for jar in s3_jars(fetch=fetch))


def spark_jars_setting() -> str:
    """The comma-separated value of ``spark.jars`` (and of spark-submit's ``--jars``)."""
    return ",".join(str(jar) for jar in spark_jars())


def kafka_classpath() -> str:
    """A ``java -cp`` value holding Kafka's jars."""
    return os.pathsep.join(str(jar) for jar in kafka_jars())


def delta_settings() -> dict[str, str]:
    """The Spark settings that turn Delta on: the jars, Delta's SQL extension and Delta's catalog."""
    return {
        "spark.jars": spark_jars_setting(),
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
    }
