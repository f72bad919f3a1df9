"""Config dataclasses built from the key registry through field metadata (groupcoord.config.binding)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from groupcoord.admin.checkpoint import CheckpointConfig
from groupcoord.admin.holder import AdminConfig
from groupcoord.config import ConfigError, resolve_config
from groupcoord.config.binding import KeyedConfig, bindings, build_from_keys, from_key, minutes_to_ms
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.ingest.config import IngestConfig
from groupcoord.log.config import LeaseConfig, LogConfig
from groupcoord.member.config import MemberOptions
from groupcoord.server.endpoint import EndpointConfig
from groupcoord.state.materializer import MaterializerConfig
from groupcoord.topics.config import TopicsConfig

KEYED_CLASSES: tuple[type[KeyedConfig], ...] = (
    AdminConfig, CheckpointConfig, CoordinatorConfig, EndpointConfig, IngestConfig, LeaseConfig, LogConfig,
    MaterializerConfig, MemberOptions, TopicsConfig,
)

DEFAULTS_DIFFER_ON_PURPOSE = {("EndpointConfig", "port")}
"""A directly built endpoint binds an ephemeral port (tests); the registry's ``listen`` default is :9092."""


@pytest.mark.parametrize("cls", KEYED_CLASSES, ids=lambda c: c.__name__)
def test_dataclass_defaults_agree_with_the_registry(cls: type[KeyedConfig]) -> None:
    defaults = resolve_config()
    assert dataclasses.is_dataclass(cls)
    for f in dataclasses.fields(cls):
        binding = bindings(cls).get(f.name)
        if binding is None or f.default is dataclasses.MISSING or (cls.__name__, f.name) in DEFAULTS_DIFFER_ON_PURPOSE:
            continue
        assert binding.read(defaults) == f.default, f"{cls.__name__}.{f.name} vs {binding.key}"


def test_every_bound_key_is_read_with_its_conversion() -> None:
    config = resolve_config(spark_conf={
        "spark.groupcoord.offsets.retention.minutes": "3",
        "spark.groupcoord.group.initial.rebalance.delay.ms": "0",
        "spark.groupcoord.listen": "[::1]:7001",
        "spark.groupcoord.advertised.listener": "coord.example:9093",
    })
    coordinator = CoordinatorConfig.from_config(config)
    assert coordinator.offsets_retention_ms == 180_000
    assert coordinator.initial_rebalance_delay_ms == 0
    assert coordinator.server_side_assignment is True  # unbound: keeps its dataclass default
    endpoint = EndpointConfig.from_config(config)
    assert (endpoint.host, endpoint.port, endpoint.advertised) == ("::1", 7001, ("coord.example", 9093))


def test_ingest_lists_are_split_and_unset_strings_become_empty() -> None:
    config = resolve_config(spark_conf={
        "spark.groupcoord.group.id": "g",
        "spark.groupcoord.topics": "a, b",
        "spark.groupcoord.sink": "/tmp/sink",
        "spark.groupcoord.assignors": "server-sticky , range",
    })
    ingest = IngestConfig.from_config(config)
    assert ingest.topics == ("a", "b") and ingest.pattern is None
    assert ingest.assignors == ("server-sticky", "range")
    with pytest.raises(ConfigError, match="no group"):
        IngestConfig.from_config(resolve_config(spark_conf={"spark.groupcoord.topics": "a",
                                                      "spark.groupcoord.sink": "/tmp/sink"}))


def test_validation_still_runs_when_built_from_keys() -> None:
    config = resolve_config(spark_conf={"spark.groupcoord.lease.renew.interval.ms": "9000"})
    with pytest.raises(ConfigError, match=r"lease\.renew\.interval\.ms"):
        LeaseConfig.from_config(config)


def test_none_means_the_registry_defaults() -> None:
    assert MemberOptions.from_config() == MemberOptions.from_config(resolve_config())
    assert LogConfig.from_config() == LogConfig()


def test_explicit_values_override_bound_fields() -> None:
    built = build_from_keys(LogConfig, resolve_config(), linger_ms=1)
    assert built.linger_ms == 1
    assert built.snapshot_interval == LogConfig().snapshot_interval


def test_an_unknown_key_fails_when_the_class_is_defined() -> None:
    with pytest.raises(ConfigError):
        @dataclass(frozen=True, kw_only=True)
        class Misspelt(KeyedConfig):
            linger_ms: int = field(default=5, metadata=from_key("log.linger.msec"))


def test_minutes_to_ms() -> None:
    assert minutes_to_ms(10080) == 10080 * 60 * 1000
