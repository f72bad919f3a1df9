"""A state root on S3 (the versitygw fixture): created, reopened and refused as on a local disk; storage settings
from the environment and from ``spark.groupcoord.storage.*``; secrets refused as configuration values and never
shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.config.registry import ConfigError
from groupcoord.config.resolve import resolve_config
from groupcoord.state_root import STATE_FORMAT_VERSION, StateRoot, StateRootError
from groupcoord.storage import objects
from groupcoord.storage.location import RETRY_TIMEOUT_S, LocationError, parse_location, retry_options
from groupcoord.topics import TopicCatalog
from tests.s3.conftest import SECRET_KEY, S3Server

pytestmark = pytest.mark.integration


def test_a_new_root_on_s3_is_created_reopened_and_found_by_s3a(s3_env: dict[str, str], s3_bucket: str) -> None:
    with pytest.raises(StateRootError, match="does not exist"):
        StateRoot.open(f"s3://{s3_bucket}/root")
    root = StateRoot.open(f"s3://{s3_bucket}/root", create=True)
    assert not root.is_local and root.format_version == STATE_FORMAT_VERSION
    TopicCatalog(root).create("events", 3)

    again = StateRoot.open(f"s3a://{s3_bucket}/root/")
    assert again.location.uri == f"s3://{s3_bucket}/root"
    assert {t.name: t.partitions for t in TopicCatalog(again).list()} == {"events": 3}
    with pytest.raises(StateRootError, match="object storage"):
        _ = again.path


def test_a_prefix_holding_other_objects_is_not_a_state_root(s3_env: dict[str, str], s3_bucket: str) -> None:
    location = parse_location(f"s3://{s3_bucket}/data")
    objects.put(location, "notes.txt", b"mine")
    with pytest.raises(StateRootError, match="not a groupcoord state root"):
        StateRoot.open(location, create=True)
    assert objects.list_names(location) == ["notes.txt"]


@pytest.mark.parametrize("uri", ["gs://bucket/root", "az://container/root", "abfss://c@a.dfs.core.windows.net/r"])
def test_other_schemes_are_refused_in_one_line(uri: str) -> None:
    with pytest.raises(StateRootError, match=r"unsupported storage scheme .*use a local path, s3:// or s3a://") as e:
        StateRoot.open(uri, create=True)
    assert "\n" not in str(e.value)


def test_unsafe_rename_and_credentials_in_the_uri_are_refused(s3_env: dict[str, str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StateRootError, match="must not carry credentials"):
        StateRoot.open("s3://AKIA:secret@bucket/root")
    monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")
    with pytest.raises(StateRootError, match="AWS_S3_ALLOW_UNSAFE_RENAME is set"):
        StateRoot.open("s3://bucket/root")


def test_options_come_from_storage_keys_before_the_environment_and_secrets_stay_hidden(
        s3_server: S3Server, tmp_path: Path) -> None:
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET_KEY + "\n")
    config = resolve_config(conf=[f"storage.endpoint={s3_server.endpoint}", "storage.region=eu-west-1",
                                  "storage.access.key.id=from-conf",
                                  f"storage.secret.access.key.file={secret_file}"])
    env = {"AWS_ENDPOINT_URL": "http://elsewhere:1", "AWS_ACCESS_KEY_ID": "from-env",
           "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_SESSION_TOKEN": "env-token"}
    location = parse_location("s3://b/root", settings=config.section("storage."), environ=env)
    assert location.options == {
        "aws_conditional_put": "etag", "aws_endpoint": s3_server.endpoint, "aws_allow_http": "true",
        "aws_region": "eu-west-1", "aws_access_key_id": "from-conf", "aws_secret_access_key": SECRET_KEY,
        "aws_session_token": "env-token", **retry_options(RETRY_TIMEOUT_S)}
    shown = f"{location!r} {location} {(location / 'log')!r}"
    assert SECRET_KEY not in shown and "env-token" not in shown


@pytest.mark.parametrize("key", ["storage.secret.access.key", "spark.groupcoord.storage.session.token"])
def test_a_secret_as_a_conf_value_is_refused_without_echoing_it(key: str) -> None:
    with pytest.raises(ConfigError, match="is a secret and is refused") as refused:
        resolve_config(conf=[f"{key}=hunter2"])
    assert "hunter2" not in str(refused.value) and "\n" not in str(refused.value)


def test_a_missing_secret_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(LocationError, match=r"cannot read spark\.groupcoord\.storage\.secret\.access\.key\.file"):
        parse_location("s3://b/r", settings={"storage.secret.access.key.file": str(tmp_path / "none")}, environ={})
