"""The key registry, its precedence rules, and the generated defaults file."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.config import REGISTRY, ConfigError, resolve_config
from groupcoord.config.generate import render_defaults

ROOT = Path(__file__).resolve().parents[2]


def test_generated_defaults_file_matches_the_registry() -> None:
    committed = (ROOT / "conf" / "groupcoord-defaults.conf").read_text(encoding="utf-8")
    assert committed == render_defaults(), "run `make conf` to regenerate conf/groupcoord-defaults.conf"


def test_coordinator_defaults() -> None:
    config = resolve_config()
    assert config["listen"] == "127.0.0.1:9092"
    assert config["group.min.session.timeout.ms"] == 6000
    assert config["group.max.session.timeout.ms"] == 1800000
    assert config["group.initial.rebalance.delay.ms"] == 3000
    assert config["group.max.size"] == 2147483647
    assert config["offsets.retention.minutes"] == 10080
    assert config["offset.metadata.max.bytes"] == 4096
    assert config["socket.request.max.bytes"] == 104857600
    assert config["state.root"] is None
    assert config["advertised.listener"] is None


def test_precedence_defaults_file_spark_conf_flag(tmp_path: Path) -> None:
    conf_file = tmp_path / "g.conf"
    conf_file.write_text(
        "# comment\nspark.groupcoord.group.max.size 10\nspark.groupcoord.offset.metadata.max.bytes=11\n"
        "spark.groupcoord.offsets.retention.minutes 12\nspark.groupcoord.group.initial.rebalance.delay.ms 13\n"
        "spark.executor.memory 4g\n"
    )
    config = resolve_config(
        conf_file=conf_file,
        spark_conf=[("spark.groupcoord.offset.metadata.max.bytes", "21"),
                    ("spark.groupcoord.offsets.retention.minutes", "22"),
                    ("spark.groupcoord.group.initial.rebalance.delay.ms", "23"), ("spark.app.name", "x")],
        conf=["offsets.retention.minutes=32", "spark.groupcoord.group.initial.rebalance.delay.ms=33"],
        flags={"group.initial.rebalance.delay.ms": 44, "group.max.size": None},
    )
    assert config["group.max.size"] == 10
    assert config["offset.metadata.max.bytes"] == 21
    assert config["offsets.retention.minutes"] == 32
    assert config["group.initial.rebalance.delay.ms"] == 44


def test_unknown_key_names_the_closest_known_key() -> None:
    with pytest.raises(ConfigError, match=r"unknown configuration key spark\.groupcoord\.group\.max\.sise; "
                                          r"did you mean spark\.groupcoord\.group\.max\.size\?"):
        resolve_config(conf=["spark.groupcoord.group.max.sise=3"])


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("group.max.size=abc", "expected an integer"),
        ("group.max.size=0", "must be at least 1"),
        ("listen=nohost", "expected HOST:PORT"),
        ("group.min.session.timeout.ms=9999999", "exceeds"),
        ("noequals", "expects KEY=VALUE"),
    ],
)
def test_bad_values_are_one_line_errors(pair: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        resolve_config(conf=[pair])
    assert "\n" not in str(info.value)


def test_every_key_is_documented_and_its_default_valid() -> None:
    for key in REGISTRY:
        assert key.doc.strip(), key.name
        assert key.full_name.startswith("spark.groupcoord.")
        assert key.parse(key.default) == key.default


def test_missing_conf_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read conf file"):
        resolve_config(conf_file=tmp_path / "absent.conf")
