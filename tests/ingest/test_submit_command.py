"""The command line ``bin/spark-submit`` builds: groupcoord's jars, Delta settings and JVM options first, the caller's
spark-submit flags merged after them, and the application's own arguments untouched.
(``test_spark_submit`` runs the wrapper for real from a clean environment.)"""

from __future__ import annotations

from pathlib import Path

from groupcoord.config.jars import DELTA_CATALOG, DELTA_EXTENSION, spark_jars_setting
from groupcoord.spark.submit import (
    LOCAL_SETTINGS,
    LOG4J2_CONFIG,
    driver_java_options,
    spark_home,
    submit_command,
    submit_env,
)

LOCAL_CONFS = [f"{key}={value}" for key, value in LOCAL_SETTINGS.items()]


def option_values(command: list[str], flag: str) -> list[str]:
    """Every value given to ``flag`` before the application (``jobs/...``)."""
    end = next(i for i, arg in enumerate(command) if arg.startswith("jobs/"))
    return [command[i + 1] for i in range(1, end) if command[i] == flag]


def test_the_jars_delta_settings_and_quiet_logging_come_first_and_the_job_arguments_stay_as_given() -> None:
    job_args = ["--state-root", "var/x", "--conf", "checkpoint.window=3", "--jars", "not-spark-submits"]
    command = submit_command(["--master", "local[2]", "jobs/offset_checkpoint.py", *job_args])
    assert command[0] == str(spark_home() / "bin" / "spark-submit")
    assert Path(command[0]).is_file()
    assert command[-len(job_args) - 1:] == ["jobs/offset_checkpoint.py", *job_args]
    assert option_values(command, "--jars") == [spark_jars_setting()]
    assert option_values(command, "--master") == ["local[2]"]
    assert option_values(command, "--conf") == [
        f"spark.sql.extensions={DELTA_EXTENSION}", f"spark.sql.catalog.spark_catalog={DELTA_CATALOG}",
        "spark.executor.extraJavaOptions=-Duser.timezone=UTC", *LOCAL_CONFS]
    assert option_values(command, "--driver-java-options") == [
        f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} -Duser.timezone=UTC"]
    assert LOG4J2_CONFIG.is_file()


def test_the_callers_jars_and_java_options_are_added_after_groupcoords_not_dropped() -> None:
    command = submit_command([
        "--jars=/opt/extra.jar", "--verbose", "--driver-java-options", "-Dlog4j2.configurationFile=mine.xml",
        "-c", "spark.executor.extraJavaOptions=-Xss4m", "--conf", "spark.ui.enabled=false", "--conf=spark.jars=b.jar",
        "jobs/streaming_ingest.py", "--group", "g"])
    assert option_values(command, "--jars") == [f"{spark_jars_setting()},/opt/extra.jar,b.jar"]
    assert option_values(command, "--driver-java-options") == [
        f"{driver_java_options()} -Dlog4j2.configurationFile=mine.xml"]  # the JVM keeps the last -D: the caller's
    assert "spark.executor.extraJavaOptions=-Duser.timezone=UTC -Xss4m" in option_values(command, "--conf")
    assert "spark.ui.enabled=false" in option_values(command, "--conf")
    assert "--verbose" in command[:command.index("jobs/streaming_ingest.py")]
    assert command[-3:] == ["jobs/streaming_ingest.py", "--group", "g"]


def test_the_environment_names_this_spark_and_keeps_a_python_the_caller_chose() -> None:
    env = submit_env({"PATH": "/usr/bin:/bin", "SPARK_HOME": "/opt/other-spark", "PYSPARK_PYTHON": "./env/bin/python"})
    assert env["SPARK_HOME"] == str(spark_home())
    assert (spark_home() / "bin" / "spark-class").is_file()
    assert env["PYSPARK_PYTHON"] == "./env/bin/python"
    assert Path(env["PYSPARK_DRIVER_PYTHON"]).name.startswith("python")


def test_a_local_master_gets_the_small_table_settings_which_the_callers_own_override() -> None:
    """Local (``local[...]`` or no master: Spark's default ``local[*]``): Delta sized for small tables, before the
    caller's ``--conf`` (spark-submit keeps the last value of a key). A cluster's master keeps Delta's defaults."""
    key = "spark.databricks.delta.snapshotPartitions"
    assert LOCAL_SETTINGS[key] == "1"
    for master in (["--master", "local[4,4]"], ["--master=local"], []):
        confs = option_values(submit_command([*master, "jobs/x.py"]), "--conf")
        assert confs[-len(LOCAL_CONFS):] == LOCAL_CONFS, master
    mine = option_values(submit_command(["--conf", f"{key}=8", "jobs/x.py"]), "--conf")
    assert mine.index(f"{key}=8") > mine.index(f"{key}=1")
    for master in (["--master", "spark://127.0.0.1:7077"], ["--master", "yarn"]):
        assert not set(LOCAL_CONFS) & set(option_values(submit_command([*master, "jobs/x.py"]), "--conf")), master
