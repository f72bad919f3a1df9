"""Where ``make install`` put the JVM jars, and the two classpaths built from them.

``jvm/install_jars.py`` fetches two sets with Maven into ``<venv>/jars``: ``spark`` (Delta Spark, Spark's Kafka source
and their dependencies that pyspark does not ship) and ``kafka`` (Apache Kafka's broker, clients and group
coordinator). The two are never put on one classpath. ``$GROUPCOORD_JARS`` points somewhere else (a folder holding
``spark/`` and ``kafka/``).
"""

from __future__ import annotations

import os
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
