"""The source's options: Spark's Kafka source options classified, the registry keys, and bad input named."""

from __future__ import annotations

import logging

import pytest

from groupcoord.source.options import (
    JAVA_ONLY_KAFKA_SETTINGS,
    REJECTED_OPTIONS,
    SourceOptionError,
    parse_source_options,
)

BASE = {"group.id": "g", "state.root": "/data/gc", "subscribe": "orders"}


def test_kafka_source_options_and_registry_keys_are_read() -> None:
    options = parse_source_options({
        **BASE, "subscribe": "orders, returns", "startingOffsets": "earliest", "maxOffsetsPerTrigger": "500",
        "minPartitions": "8", "includeHeaders": "true", "failOnDataLoss": "false", "assignors": "cooperative-sticky",
        "member.request.timeout.ms": "5000", "session.timeout.ms": "10000", "heartbeat.interval.ms": "1000",
        "kafka.bootstrap.servers": "h:9092", "kafka.security.protocol": "PLAINTEXT",
    })
    assert options.topics == ("orders", "returns")
    assert (options.starting, options.max_offsets_per_trigger, options.min_partitions) == ("earliest", 500, 8)
    assert options.include_headers and not options.fail_on_data_loss
    assert options.assignors == ("cooperative-sticky",)
    assert options.member.request_timeout_ms == 5000
    assert (options.session_timeout_ms, options.heartbeat_interval_ms) == (10000, 1000)
    assert options.bootstrap_servers == "h:9092"
    assert options.kafka_settings == {"security.protocol": "PLAINTEXT"}
    assert not options.mirror_commits
    assert parse_source_options({**BASE, "kafka.bootstrap.servers": "h:9092", "MirrorCommitsToKafka": "true"}) \
        .mirror_commits


def test_names_are_case_insensitive_as_in_spark() -> None:
    options = parse_source_options({**BASE, "MAXOFFSETSPERTRIGGER": "7", "startingoffsets": "Latest"})
    assert (options.max_offsets_per_trigger, options.starting) == (7, "latest")


def test_session_conf_gives_the_registry_defaults_and_options_override_them() -> None:
    session = {"spark.groupcoord.state.root": "/from/session", "spark.groupcoord.group.id": "session-group"}
    options = parse_source_options({"subscribe": "t"}, session)
    assert (options.group_id, options.state_root) == ("session-group", "/from/session")
    assert parse_source_options({"subscribe": "t", "group.id": "mine"}, session).group_id == "mine"


def test_starting_offsets_json_per_partition() -> None:
    options = parse_source_options({**BASE, "startingOffsets": '{"orders": {"0": 23, "1": -2}}'})
    assert options.starting == {"orders": {0: 23, 1: -2}}


@pytest.mark.parametrize(("options", "named"), [
    ({"bogus.option": "1"}, "'bogus.option'"),
    ({"subscribePattern": "o.*"}, "exactly one of 'subscribe' and 'subscribePattern' (both were given)"),
    ({"maxOffsetsPerTrigger": "0"}, "'maxOffsetsPerTrigger' must be at least 1"),
    ({"failOnDataLoss": "maybe"}, "'failOnDataLoss' must be true or false"),
    ({"startingOffsets": '{"other": {"0": 1}}'}, "names topic 'other'"),
    ({"startingOffsets": "middle"}, "startingOffsets must be earliest, latest or JSON"),
    ({"session.timeout.ms": "1000", "heartbeat.interval.ms": "3000"}, "heartbeat.interval.ms (3000) must be lower"),
    ({"kafka.security.protocol": "SSL"}, "'kafka.security.protocol' needs kafka.bootstrap.servers"),
    ({"mirrorCommitsToKafka": "true"}, "'mirrorCommitsToKafka' needs kafka.bootstrap.servers"),
    ({"member.request.timeout.ms": "-5"}, "member.request.timeout.ms"),
])
def test_a_bad_option_or_contradictory_pair_is_named(options: dict[str, str], named: str) -> None:
    with pytest.raises(SourceOptionError) as failure:
        parse_source_options({**BASE, **options})
    assert named in str(failure.value)


def test_missing_group_and_subscription_are_named() -> None:
    with pytest.raises(SourceOptionError, match=r"'group\.id' is required"):
        parse_source_options({"state.root": "/r", "subscribe": "t"})
    with pytest.raises(SourceOptionError, match=r"'state\.root' is required"):
        parse_source_options({"group.id": "g", "subscribe": "t"})
    with pytest.raises(SourceOptionError, match="exactly one of 'subscribe' and 'subscribePattern'"):
        parse_source_options({"group.id": "g", "state.root": "/r"})


@pytest.mark.parametrize("name", sorted({*REJECTED_OPTIONS, *JAVA_ONLY_KAFKA_SETTINGS}))
def test_every_rejected_option_says_why(name: str) -> None:
    options = {**BASE, name: "x"}
    if name.startswith("kafka."):
        options["kafka.bootstrap.servers"] = "h:9092"
    with pytest.raises(SourceOptionError) as failure:
        parse_source_options(options)
    reason = {**REJECTED_OPTIONS, **JAVA_ONLY_KAFKA_SETTINGS}[name]
    assert f"option {name!r} is not accepted: {reason}" in str(failure.value)


def test_warned_options_are_accepted_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="groupcoord.source.options"):
        parse_source_options({**BASE, "fetchOffset.numRetries": "3"})
    assert "fetchOffset.numRetries is ignored" in caplog.text
