"""``bin/spark-submit``: Spark's spark-submit run with this venv, from any shell, with what groupcoord's jobs need.

pyspark's own ``spark-submit`` script finds ``SPARK_HOME`` by running whatever ``python3`` is first on the ``PATH``;
outside an activated venv that is another Python, and the script fails (``/bin/spark-class: No such file or
directory``). This wrapper, started by the venv's Python, sets instead:

- ``SPARK_HOME`` to the installed pyspark, and ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` to the venv's Python
  (unless already set: a packed venv on a cluster names its own);
- ``--jars``: Delta's and the Kafka source's jars (:func:`groupcoord.config.jars.spark_jars_setting`). They must be
  on the command line: a builder setting inside the job comes after the driver's JVM has started, too late for its
  classpath;
- Delta's SQL extension and catalog (:func:`groupcoord.config.jars.delta_settings`);
- the driver's JVM options ``-Dlog4j2.configurationFile=conf/log4j2.properties`` (Spark at WARN, so the job's own
  output is not buried) and ``-Duser.timezone=UTC`` (as every local session has; the executors get it too);
- on a local master (``--master local...``, or none: Spark's default is ``local[*]``), the Delta settings every local
  session gets for small tables (:data:`LOCAL_SETTINGS`): Delta's defaults are sized for clusters, and the demo job's
  first read of a 3-row table took 21 s with them and 8 s with these;
- when an argument names S3 (``s3://`` or ``s3a://``: a state root, a sink, a checkpoint), the ``s3`` jars (fetched on
  first use; read in place on a local master or a standalone master on loopback, copied to each executor otherwise:
  :func:`groupcoord.spark.s3a.spark_conf`), the S3A settings of each bucket named
  (:func:`groupcoord.spark.s3a.spark_conf`: endpoint, region, path-style access, the environment's credentials provider;
  never a secret), with the ``spark.groupcoord.storage.*`` settings given with ``--conf``; and the credentials in
  spark-submit's *environment*, which the driver's JVM inherits (from the environment, or read from the files the
  ``storage.*.file`` settings name).

Every other argument goes to spark-submit unchanged, so ``bin/spark-submit`` takes exactly spark-submit's flags.
The caller's own jars (``--jars``, ``--conf spark.jars=``) and Java options (``--driver-java-options``, ``--conf
spark.{driver,executor}.extraJavaOptions=``) are added after groupcoord's rather than replacing them (spark-submit
keeps one value of each); for a ``-D`` option given twice the JVM keeps the last, so the caller's wins.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from groupcoord.config.jars import DELTA_CATALOG, DELTA_EXTENSION, spark_jars_setting
from groupcoord.spark.driver_address import master_on_loopback
from groupcoord.spark.s3a import credential_environment, spark_conf
from groupcoord.spark.session import SMALL_TABLE_SETTINGS
from groupcoord.storage.location import TableLocation, parse_location

REPO = Path(__file__).resolve().parents[2]
WRAPPER = REPO / "bin" / "spark-submit"
VENV_ENV = "GROUPCOORD_VENV"
"""Read by ``bin/spark-submit``: the venv whose Python runs this module (default: the checkout's ``.venv``)."""
LOG4J2_CONFIG = REPO / "conf" / "log4j2.properties"
UTC_JAVA_OPTION = "-Duser.timezone=UTC"

LOCAL_SETTINGS = SMALL_TABLE_SETTINGS
"""Settings given on a local master (before the caller's ``--conf``, so that the caller's value wins)."""

# spark-submit's flags that take no value (everything else starting with "-" takes one); the first argument that is
# neither a flag nor a flag's value is the application, and what follows it belongs to the application.
_FLAGS_WITHOUT_VALUE = frozenset({"-h", "--help", "-v", "--verbose", "--version", "--supervise", "--usage-error"})
_ALIASES = {"-c": "--conf"}
_JARS_KEY = "spark.jars"
_DRIVER_JAVA_KEY = "spark.driver.extraJavaOptions"
_EXECUTOR_JAVA_KEY = "spark.executor.extraJavaOptions"
_DRIVER_CLASSPATH_KEY = "spark.driver.extraClassPath"


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark (its ``bin/spark-class`` and ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def submit_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``SPARK_HOME`` on this pyspark and, unless set, Spark's Python on this interpreter."""
    env = {**base, "SPARK_HOME": str(spark_home())}
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return env


def driver_java_options() -> str:
    """The driver's JVM options groupcoord passes: its log4j2 configuration and UTC."""
    return f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} {UTC_JAVA_OPTION}"


_S3_URI = re.compile(r"s3a?://[^\s,;'\"]+")
_STORAGE_CONF = re.compile(r"^spark\.groupcoord\.(storage\.[a-z.]+)=(.*)$")


def s3_locations(args: Sequence[str]) -> list[TableLocation]:
    """Every S3 location an argument names (``s3://``, ``s3a://``), opened with the ``spark.groupcoord.storage.*``
    settings given with ``--conf`` (and this environment)."""
    settings = {match.group(1): match.group(2) for arg in args if (match := _STORAGE_CONF.match(arg))}
    return [parse_location(uri, settings=settings) for arg in args for uri in _S3_URI.findall(arg)]


def submit_command(args: Sequence[str]) -> list[str]:
    """The spark-submit command line for ``args`` (spark-submit's own flags, the application, its arguments)."""
    options, application = _split_options(args)
    merged = {_JARS_KEY: [spark_jars_setting()], _DRIVER_JAVA_KEY: [driver_java_options()],
              _EXECUTOR_JAVA_KEY: [UTC_JAVA_OPTION], _DRIVER_CLASSPATH_KEY: []}
    passed: list[str] = []
    masters = [value for name, value in options if name == "--master"]
    on_local = not masters or (masters[-1] or "").startswith("local")
    local = [arg for key, value in LOCAL_SETTINGS.items() for arg in ("--conf", f"{key}={value}")] if on_local else []
    s3 = spark_conf(*s3_locations(args), local=on_local,
                    this_host=not on_local and master_on_loopback(masters[-1] or ""))
    for key in (_JARS_KEY, _DRIVER_CLASSPATH_KEY):
        if key in s3:
            merged[key].append(s3.pop(key))
    for name, value in options:
        key, _, setting = (value or "").partition("=")
        if name == "--jars" and value:
            merged[_JARS_KEY].append(value)
        elif name == "--driver-java-options" and value:
            merged[_DRIVER_JAVA_KEY].append(value)
        elif name == "--driver-class-path" and value:
            merged[_DRIVER_CLASSPATH_KEY].append(value)
        elif name == "--conf" and key in merged:
            merged[key].append(setting)
        else:
            passed += [name] if value is None else [name, value]
    classpath = [arg for arg in ("--driver-class-path", os.pathsep.join(merged[_DRIVER_CLASSPATH_KEY]))
                 if merged[_DRIVER_CLASSPATH_KEY]]
    return [
        str(spark_home() / "bin" / "spark-submit"),
        "--jars", ",".join(merged[_JARS_KEY]),
        "--conf", f"spark.sql.extensions={DELTA_EXTENSION}",
        "--conf", f"spark.sql.catalog.spark_catalog={DELTA_CATALOG}",
        "--driver-java-options", " ".join(merged[_DRIVER_JAVA_KEY]),
        "--conf", f"{_EXECUTOR_JAVA_KEY}={' '.join(merged[_EXECUTOR_JAVA_KEY])}",
        *classpath, *(arg for key, value in s3.items() for arg in ("--conf", f"{key}={value}")),
        *local, *passed, *application,
    ]


def _split_options(args: Sequence[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """spark-submit's options as (flag, value or None), and the rest: the application and its arguments."""
    options: list[tuple[str, str | None]] = []
    rest = list(args)
    while rest and rest[0].startswith("-"):
        flag = _ALIASES.get(rest[0], rest[0])
        rest.pop(0)
        if flag in _FLAGS_WITHOUT_VALUE:
            options.append((flag, None))
        elif "=" in flag and flag.startswith("--"):
            name, value = flag.split("=", 1)
            options.append((name, value))
        elif rest:
            options.append((flag, rest.pop(0)))
        else:
            options.append((flag, None))  # a flag missing its value: spark-submit reports it
    return options, rest


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Replace this process with spark-submit (signals then reach it directly), with the S3 credentials the
    arguments' locations need in its environment (never on its command line)."""
    args = sys.argv[1:] if argv is None else list(argv)
    command = submit_command(args)
    credentials = {k: v for location in s3_locations(args) for k, v in credential_environment(location).items()}
    os.execve(command[0], command, submit_env({**os.environ, **credentials}))


if __name__ == "__main__":
    main()
