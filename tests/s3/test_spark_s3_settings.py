"""What the Spark side is given for S3, without starting Spark: ``bin/spark-submit``'s command line and environment,
the S3A settings, the options of the source and the sink, and paths as URIs.

No secret may reach a Spark setting (its UI and event log show them): the credentials go to spark-submit's
environment only, and a secret given as an option is refused with one line.
"""

from __future__ import annotations

import os

import pytest

from bench.s3_server import SECRET_KEY
from groupcoord.config.jars import s3_classpath, s3_jars_setting
from groupcoord.sink.options import SinkOptionError, SinkOptions
from groupcoord.source.fences import fences_dir
from groupcoord.source.options import SourceOptionError, parse_source_options
from groupcoord.spark.s3a import CREDENTIALS_PROVIDER, bucket_settings, credential_environment, spark_conf
from groupcoord.spark.submit import s3_locations, submit_command
from groupcoord.storage.location import parse_location

ENDPOINT = "http://127.0.0.1:7070"
ARGS = ["--conf", f"spark.groupcoord.storage.endpoint={ENDPOINT}", "jobs/streaming_ingest.py",
        "--state-root", "s3://state-bucket/root", "--sink", "s3a://lake-bucket/orders"]


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The secret in this process's environment, as a user's shell has it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def test_spark_submit_adds_the_s3_jars_and_each_buckets_s3a_settings_but_no_secret(secrets: None) -> None:
    local = submit_command(["--master", "local[2]", *ARGS])
    assert SECRET_KEY not in " ".join(local)
    confs = [local[i + 1] for i, arg in enumerate(local) if arg == "--conf"]
    for bucket in ("state-bucket", "lake-bucket"):
        assert f"spark.hadoop.fs.s3a.bucket.{bucket}.endpoint={ENDPOINT}" in confs
        assert f"spark.hadoop.fs.s3a.bucket.{bucket}.path.style.access=true" in confs
        assert f"spark.hadoop.fs.s3a.bucket.{bucket}.aws.credentials.provider={CREDENTIALS_PROVIDER}" in confs
    assert local[local.index("--driver-class-path") + 1] == s3_classpath()  # local: no 686 MB copy per executor
    cluster = submit_command(["--master", "spark://10.0.0.5:7077", *ARGS])
    assert s3_jars_setting() in cluster[cluster.index("--jars") + 1]
    assert "--driver-class-path" not in cluster
    # A standalone master on loopback: every worker is of this machine, so every JVM reads the jars in place.
    this_host = submit_command(["--master", "spark://127.0.0.1:7077", *ARGS])
    assert s3_jars_setting() not in this_host[this_host.index("--jars") + 1]
    assert this_host[this_host.index("--driver-class-path") + 1] == s3_classpath()
    assert f"spark.executor.extraClassPath={s3_classpath()}" in this_host
    plain = submit_command(["--master", "local[2]", "jobs/offset_checkpoint.py", "--state-root", "/data/gc"])
    assert not any("s3a" in arg for arg in plain)
    env = {key: value for location in s3_locations(ARGS) for key, value in credential_environment(location).items()}
    assert env == {"AWS_ACCESS_KEY_ID": "key-id", "AWS_SECRET_ACCESS_KEY": SECRET_KEY}


def test_the_s3a_settings_come_from_the_storage_settings_and_carry_no_secret(secrets: None) -> None:
    location = parse_location("s3a://b/x", settings={"storage.endpoint": "https://s3.example", "storage.region": "r1"})
    assert location.uri == "s3://b/x" and location.spark_uri == "s3a://b/x"
    assert location.spec() == ("s3://b/x", {"storage.endpoint": "https://s3.example", "storage.region": "r1"})
    settings = bucket_settings(location)
    assert settings["fs.s3a.bucket.b.endpoint.region"] == "r1"
    assert settings["fs.s3a.bucket.b.connection.ssl.enabled"] == "true"
    assert settings["fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    conf = spark_conf(location, checkpoints=True, jars=False)
    assert SECRET_KEY not in repr(conf) and SECRET_KEY not in repr(location)
    assert conf["spark.sql.streaming.checkpointFileManagerClass"].endswith("AbortableStreamBasedCheckpointFileManager")
    assert bucket_settings(parse_location("/tmp/local")) == {} == spark_conf(parse_location("/tmp/local"))


def test_the_sink_and_the_source_take_uris_and_storage_settings_and_refuse_secrets() -> None:
    options = SinkOptions.parse({"path": "s3a://b/sink", "group.id": "g", "checkpointLocation": "s3a://b/ckpt",
                                 "state.root": "s3://b/root/", "storage.endpoint": ENDPOINT})
    assert (options.path, options.checkpoint, options.state_root) == ("s3://b/sink", "s3://b/ckpt", "s3://b/root")
    assert options.storage == {"storage.endpoint": ENDPOINT}
    assert SinkOptions.parse({"path": "file:///data/t", "group.id": "g", "checkpointLocation": "c",
                              "state.root": "/r"}).path == "/data/t"
    with pytest.raises(SinkOptionError, match=r"'storage\.secret\.access\.key' is a secret"):
        SinkOptions.parse({"path": "s3://b/t", "group.id": "g", "checkpointLocation": "s3://b/c",
                           "state.root": "s3://b/r", "storage.secret.access.key": SECRET_KEY})
    with pytest.raises(SinkOptionError, match="unsupported storage scheme gs://"):
        SinkOptions.parse({"path": "gs://b/t", "group.id": "g", "checkpointLocation": "c", "state.root": "/r"})
    source = parse_source_options({"group.id": "g", "subscribe": "t", "state.root": "s3a://b/root",
                                   "storage.endpoint": ENDPOINT})
    assert source.storage == {"storage.endpoint": ENDPOINT}
    with pytest.raises(SourceOptionError, match="secret"):
        parse_source_options({"group.id": "g", "subscribe": "t", "state.root": "s3://b/root"},
                             {"spark.groupcoord.storage.secret.access.key": SECRET_KEY})


def test_an_s3_root_has_one_fence_directory_whatever_its_scheme() -> None:
    assert fences_dir("s3a://b/root/", "g") == fences_dir("s3://b/root", "g")
    assert fences_dir("s3://b/root", "g") != fences_dir("s3://b/other", "g")
    assert str(fences_dir("s3://b/root", "g")).startswith(os.environ.get("GROUPCOORD_STREAMING_FENCES_DIR", "/"))
