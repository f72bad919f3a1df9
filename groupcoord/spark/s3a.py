"""Spark's side of a state root or a table on S3: Hadoop's S3A filesystem (``s3a://``), without a secret in any conf.

delta-spark (the state views, the checkpoint job) and Spark's own streaming checkpoints reach S3 through Hadoop's
S3A filesystem, which needs the ``s3`` jar set (:func:`groupcoord.config.jars.s3_jars`: ``hadoop-aws`` with the AWS
SDK bundle, and ``spark-hadoop-cloud``) on the classpath from the JVM's start, and these Hadoop settings:

- the endpoint, path-style access and plain HTTP for an S3-compatible server, and the region: from the location's
  storage options (``spark.groupcoord.storage.*``, else ``AWS_ENDPOINT_URL``, ``AWS_REGION``);
- the credentials: :data:`CREDENTIALS_PROVIDER`, the AWS SDK's provider of the ``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN`` environment variables of the JVM itself. So no secret is ever
  a Spark or Hadoop setting, and none shows in Spark's UI, its event log or a conf dump: the driver's JVM inherits
  them from the process that starts it (``bin/spark-submit`` exports the files named by
  ``spark.groupcoord.storage.*.file`` there, :func:`credential_environment`), an executor's JVM from its cluster
  manager (README "State root on S3");
- ``s3://`` mapped to S3A too (``fs.s3.impl``), so that a user's ``s3://`` path works in Spark as in delta-rs;
- for queries whose checkpoint is on S3, Spark's :data:`CHECKPOINT_FILE_MANAGER` (writes each checkpoint file
  once, with no rename, which S3 does not have).

:func:`spark_conf` is the whole static conf for a session or a ``spark-submit`` (the jars too), per bucket so that
buckets of other endpoints keep theirs; :func:`use_s3a` sets the same per-bucket settings at run time in a running
session (Spark copies its SQL conf into every Hadoop configuration it builds), for a bucket the session did not know
when it started.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from groupcoord.config.jars import s3_classpath, s3_jars_setting
from groupcoord.storage.location import TableLocation

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CHECKPOINT_FILE_MANAGER", "CREDENTIALS_PROVIDER", "bucket_settings", "credential_environment",
           "s3a_checkpoints", "spark_conf", "use_s3a"]

CREDENTIALS_PROVIDER = "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"
"""S3A's credentials: the JVM's ``AWS_*`` environment variables (never a configuration value)."""

CHECKPOINT_FILE_MANAGER = "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager"
"""Spark's checkpoint file manager for object stores (``spark-hadoop-cloud``): a checkpoint file is written once by
an abortable stream, instead of to a temporary file renamed (a copy and a delete on S3)."""

CHECKPOINT_MANAGER_KEY = "spark.sql.streaming.checkpointFileManagerClass"
DRIVER_CLASSPATH_KEY = "spark.driver.extraClassPath"
EXECUTOR_CLASSPATH_KEY = "spark.executor.extraClassPath"
_S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
_SECRETS = {"aws_access_key_id": "AWS_ACCESS_KEY_ID", "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY",
            "aws_session_token": "AWS_SESSION_TOKEN"}


def bucket_settings(location: TableLocation) -> dict[str, str]:
    """Hadoop's ``fs.s3a.bucket.<bucket>.*`` settings for ``location``'s bucket (no secret), and the ``s3://``
    scheme mapped to S3A. Empty for a local location."""
    if location.is_local:
        return {}
    bucket, _ = location.bucket_and_key
    options = location.options
    prefix = f"fs.s3a.bucket.{bucket}."
    settings = {
        "fs.s3.impl": _S3A,
        "fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
        prefix + "aws.credentials.provider": CREDENTIALS_PROVIDER,
        prefix + "endpoint.region": options.get("aws_region", "us-east-1"),
    }
    endpoint = options.get("aws_endpoint")
    if endpoint:
        settings[prefix + "endpoint"] = endpoint
        settings[prefix + "path.style.access"] = "true"  # S3-compatible servers name buckets in the path
        settings[prefix + "connection.ssl.enabled"] = str(not endpoint.startswith("http://")).lower()
    return settings


def spark_conf(*locations: TableLocation, checkpoints: bool = False, jars: bool = True,
               local: bool = False, this_host: bool = False) -> dict[str, str]:
    """The static Spark conf for ``locations`` on S3: ``spark.hadoop.*`` per bucket, the ``s3`` jar set (``jars``;
    fetched on first use) and, with ``checkpoints`` (every query's checkpoint is on S3: the manager refuses a local
    one), :data:`CHECKPOINT_FILE_MANAGER`. Never a secret. The jars are ``spark.jars`` (add them to the others
    there), which Spark copies into every executor's work directory (686 MB for the AWS SDK bundle: 10 s per executor
    here, again for each new executor); on a ``local`` master ``spark.driver.extraClassPath`` instead (the executors
    are the driver's JVM), and when the executors run on ``this_host`` (a standalone master on loopback, whose
    workers can only be of this machine) ``spark.executor.extraClassPath`` too: every JVM reads the jars in place."""
    conf = {f"spark.hadoop.{key}": value for location in locations for key, value in bucket_settings(location).items()}
    if not conf:
        return {}
    if jars and (local or this_host):
        conf[DRIVER_CLASSPATH_KEY] = s3_classpath()
        if this_host and not local:
            conf[EXECUTOR_CLASSPATH_KEY] = conf[DRIVER_CLASSPATH_KEY]
    elif jars:
        conf["spark.jars"] = s3_jars_setting()
    if checkpoints:
        conf[CHECKPOINT_MANAGER_KEY] = CHECKPOINT_FILE_MANAGER
    return conf


def use_s3a(spark: SparkSession, *locations: TableLocation, checkpoints: bool = False) -> None:
    """Set the per-bucket S3A settings of ``locations`` in the running session (its runtime SQL conf, which Spark
    copies into the Hadoop configuration of every read, write and streaming checkpoint); with ``checkpoints``,
    the session's streaming queries started from now on keep their checkpoints with :data:`CHECKPOINT_FILE_MANAGER`.
    The session must have the ``s3`` jars (:func:`spark_conf`). Nothing happens for local locations."""
    for location in locations:
        for key, value in bucket_settings(location).items():
            spark.conf.set(key, value)
    if checkpoints:
        spark.conf.set(CHECKPOINT_MANAGER_KEY, CHECKPOINT_FILE_MANAGER)


@contextlib.contextmanager
def s3a_checkpoints(spark: SparkSession) -> Iterator[None]:
    """Queries started inside keep their checkpoints on S3 with :data:`CHECKPOINT_FILE_MANAGER`; the session's
    previous manager is back afterwards (a local checkpoint needs it: the S3 manager refuses a local directory)."""
    previous = spark.conf.get(CHECKPOINT_MANAGER_KEY, None)
    spark.conf.set(CHECKPOINT_MANAGER_KEY, CHECKPOINT_FILE_MANAGER)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(CHECKPOINT_MANAGER_KEY)
        else:
            spark.conf.set(CHECKPOINT_MANAGER_KEY, previous)


def credential_environment(location: TableLocation) -> dict[str, str]:
    """The ``AWS_*`` credential variables a JVM started for ``location`` needs (from the environment, or from the
    files ``spark.groupcoord.storage.*.file`` names): what a launcher puts in the environment of the process that
    starts Spark, never in a conf. Empty for a local location."""
    options: Mapping[str, str] = {} if location.is_local else location.options
    return {variable: options[name] for name, variable in _SECRETS.items() if options.get(name)}
