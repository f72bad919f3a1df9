"""Loading Kafka's message schemas from the kafka-clients jar, and the model they become."""

from __future__ import annotations

import uuid
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from groupcoord.config.jars import JARS_ENV, JarsMissingError
from groupcoord.protocol.schemas import (
    SchemaFormatError,
    SchemasMissingError,
    Versions,
    api_versions,
    default_value,
    load_schemas,
    message_schema,
    schema_for,
    struct_default,
)
from groupcoord.protocol.schemas.loader import SCHEMA_FOLDER, clients_jar, strip_comments
from groupcoord.protocol.schemas.model import parse_message


def test_every_schema_file_of_the_jar_loads() -> None:
    with zipfile.ZipFile(clients_jar()) as archive:
        files = [name for name in archive.namelist() if name.startswith(SCHEMA_FOLDER) and name.endswith(".json")]
    schemas = load_schemas()
    assert len(files) == 203  # kafka-clients 4.4.0
    assert sorted(schemas) == sorted(Path(name).stem for name in files)
    assert Counter(spec.kind for spec in schemas.values()) == {"request": 95, "response": 95, "data": 11, "header": 2}


def test_schemas_are_read_once_per_process() -> None:
    assert load_schemas() is load_schemas()


def test_every_request_has_a_response_with_the_same_key_and_versions() -> None:
    for spec in load_schemas().values():
        if spec.kind == "request":
            assert spec.api_key is not None
            response = schema_for(spec.api_key, "response")
            assert response.name == spec.name.removesuffix("Request") + "Response"
            assert response.valid_versions == spec.valid_versions, spec.name
            assert response.flexible_versions == spec.flexible_versions, spec.name


def test_consumer_group_heartbeat_is_modelled_from_its_schema() -> None:
    spec = schema_for(68, "request")
    assert (spec.name, spec.kind, str(spec.valid_versions), str(spec.flexible_versions)) == (
        "ConsumerGroupHeartbeatRequest",
        "request",
        "0-1",
        "0+",
    )
    regex = spec.struct.field("SubscribedTopicRegex")
    assert (str(regex.versions), str(regex.nullable_versions), regex.default) == ("1+", "1+", "null")
    partitions = spec.struct.field("TopicPartitions")
    assert partitions.is_array and partitions.struct is not None
    assert [(field.name, field.type) for field in partitions.struct.fields] == [
        ("TopicId", "uuid"),
        ("Partitions", "[]int32"),
    ]
    assert default_value(spec.struct.field("RebalanceTimeoutMs")) == -1


def test_common_structs_are_shared_by_the_fields_that_name_them() -> None:
    spec = message_schema("ConsumerGroupHeartbeatResponse")
    assignment = spec.struct.field("Assignment")
    assert assignment.struct is not None and assignment.nullable_versions.lowest == 0
    topic_partitions = assignment.struct.field("TopicPartitions").struct
    assert topic_partitions is spec.common_structs["TopicPartitions"]


def test_the_request_header_client_id_keeps_its_int16_length_in_flexible_versions() -> None:
    spec = message_schema("RequestHeader")
    client_id = spec.struct.field("ClientId")
    assert client_id.flexible_versions is not None and client_id.flexible_versions.empty
    assert str(spec.valid_versions) == "1-2" and str(spec.flexible_versions) == "2+"


def test_tagged_fields_carry_their_tags() -> None:
    spec = message_schema("ApiVersionsResponse")
    tags = {field.name: field.tag for field in spec.fields if field.tag is not None}
    assert tags == {"SupportedFeatures": 0, "FinalizedFeaturesEpoch": 1, "FinalizedFeatures": 2, "ZkMigrationReady": 3}
    assert all(str(spec.struct.field(name).tagged_versions) == "3+" for name in tags)


def test_api_versions_list_every_api_with_a_valid_version() -> None:
    ranges = api_versions()
    assert (ranges[68].name, ranges[68].min_version, ranges[68].max_version) == ("ConsumerGroupHeartbeat", 0, 1)
    assert (ranges[69].name, ranges[69].min_version, ranges[69].max_version) == ("ConsumerGroupDescribe", 0, 1)
    assert (ranges[11].min_version, ranges[11].max_version) == (0, 9)
    assert (ranges[8].min_version, ranges[8].max_version) == (2, 10)
    assert 7 not in ranges  # ControlledShutdown: "validVersions": "none" since Kafka 4.0
    assert list(ranges) == sorted(ranges)
    unstable = {api.name for api in ranges.values() if api.latest_version_unstable}
    assert unstable <= {"ListOffsets", "InitProducerId", "EndTxn", "AddPartitionsToTxn", "DescribeQuorum"}


@pytest.mark.parametrize(
    ("text", "lowest", "highest", "shown"),
    [("0+", 0, 32767, "0+"), ("3-7", 3, 7, "3-7"), ("5", 5, 5, "5"), ("none", 0, -1, "none")],
)
def test_version_ranges_read_as_kafka_writes_them(text: str, lowest: int, highest: int, shown: str) -> None:
    versions = Versions.parse(text)
    assert (versions.lowest, versions.highest, str(versions)) == (lowest, highest, shown)
    assert (lowest in versions) == (text != "none")
    assert (highest + 1) not in versions


def test_a_bad_version_range_is_a_schema_format_error() -> None:
    with pytest.raises(SchemaFormatError, match="not a version range"):
        Versions.parse("1-x")


def test_comments_are_stripped_but_not_inside_strings() -> None:
    text = '// license\n{ "about": "see http://kafka.apache.org", // trailing\n  "a": "\\"//" }\n'
    assert strip_comments(text) == '\n{ "about": "see http://kafka.apache.org", \n  "a": "\\"//" }\n'


def test_defaults_follow_kafkas_generator() -> None:
    spec = parse_message(
        {
            "name": "SampleData",
            "type": "data",
            "validVersions": "0",
            "flexibleVersions": "0+",
            "fields": [
                {"name": "Hex", "type": "int32", "versions": "0+", "default": "0x7fffffff"},
                {"name": "Negative", "type": "int64", "versions": "0+", "default": -1},
                {"name": "Flag", "type": "bool", "versions": "0+", "default": False},
                {"name": "On", "type": "bool", "versions": "0+", "default": "true"},
                {"name": "Id", "type": "uuid", "versions": "0+", "default": "AAAAAAAAAAAAAAAAAAAAAQ"},
                {"name": "Ratio", "type": "float64", "versions": "0+", "default": "1.5"},
                {"name": "Plain", "type": "string", "versions": "0+"},
                {"name": "Blob", "type": "bytes", "versions": "0+"},
                {"name": "Nested", "type": "Inner", "versions": "0+", "fields": [
                    {"name": "Count", "type": "uint16", "versions": "0+", "default": "7"},
                ]},
                {"name": "Items", "type": "[]int32", "versions": "0+"},
            ],
        }
    )  # fmt: skip
    assert struct_default(spec.struct) == {
        "Hex": 2**31 - 1,
        "Negative": -1,
        "Flag": False,
        "On": True,
        "Id": uuid.UUID(int=1),
        "Ratio": 1.5,
        "Plain": "",
        "Blob": b"",
        "Nested": {"Count": 7},
        "Items": [],
    }


@pytest.mark.parametrize(
    ("field", "problem"),
    [
        ({"name": "A", "type": "int8", "versions": "0+", "default": "300"}, "invalid default"),
        ({"name": "A", "type": "string", "versions": "0+", "default": "null"}, "not every version is nullable"),
        ({"name": "A", "type": "[]Missing", "versions": "0+"}, "neither inline nor a common struct"),
        ({"name": "A", "type": "int32", "versions": "0+", "tag": 0}, "needs both an integer tag and taggedVersions"),
        ({"name": "A", "type": "float32", "versions": "0+"}, "unknown type"),
    ],
)
def test_a_schema_the_model_cannot_interpret_is_a_schema_format_error(field: dict[str, object], problem: str) -> None:
    document = {"name": "Broken", "type": "data", "validVersions": "0", "fields": [field]}
    with pytest.raises(SchemaFormatError, match=problem):
        parse_message(document)


def test_no_jars_at_all_is_a_one_line_error_naming_make_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(JARS_ENV, str(tmp_path))
    with pytest.raises(SchemasMissingError) as raised:
        clients_jar()
    assert "make install" in str(raised.value) and "\n" not in str(raised.value)
    assert isinstance(raised.value, JarsMissingError)


def test_kafka_jars_without_the_clients_jar_is_a_one_line_error_naming_make_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "kafka-server-4.4.0.jar").write_bytes(b"")
    monkeypatch.setenv(JARS_ENV, str(tmp_path))
    with pytest.raises(SchemasMissingError, match=r"no kafka-clients-\*\.jar .*run `make install`") as raised:
        clients_jar()
    assert "\n" not in str(raised.value)
