"""Tagged fields as Kafka's generated code reads and writes them (``MessageDataGenerator``, ``RawTaggedFieldWriter``).

- A known tagged field is written only when it holds a value other than its default; its size is the byte length of
  its value, which is always in the flexible encoding; a nullable tagged struct starts with an unsigned varint
  (0 null, 1 present).
- A tag the struct does not know is kept, not skipped: Kafka's readers store it in ``_unknownTaggedFields`` (tag and
  raw bytes) and its writers write it back, in ascending tag order among the known tags. Here it is kept under
  ``UNKNOWN_TAGGED_FIELDS``.
- A known tag at a version where its field does not exist is an error (Kafka: "Tag N is not valid for version").
"""

from __future__ import annotations

import pytest

from groupcoord.protocol.schemas import UNKNOWN_TAGGED_FIELDS, CodecError, decode, encode, message_schema
from groupcoord.protocol.schemas.model import parse_message

API_VERSIONS_BODY = {
    "ErrorCode": 0,
    "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}],
    "ThrottleTimeMs": 0,
}
API_VERSIONS_BYTES = bytes.fromhex("0000" + "02" + "0012" + "0000" + "0004" + "00" + "00000000")
"""ApiVersionsResponse v3 without its tagged section: ErrorCode, a compact array of one ApiKeys entry (with its
empty tagged section), ThrottleTimeMs."""

HEARTBEAT_V4 = bytes.fromhex("0267" + "00000003" + "026d" + "00")
"""HeartbeatRequest v4 without its tagged section: GroupId "g", GenerationId 3, MemberId "m", GroupInstanceId null."""


def test_tagged_fields_at_their_defaults_are_not_written() -> None:
    assert encode("ApiVersionsResponse", 3, API_VERSIONS_BODY) == API_VERSIONS_BYTES + b"\x00"
    explicit_defaults = {**API_VERSIONS_BODY, "FinalizedFeaturesEpoch": -1, "ZkMigrationReady": False}
    assert encode("ApiVersionsResponse", 3, explicit_defaults) == API_VERSIONS_BYTES + b"\x00"


def test_a_known_tagged_field_is_written_with_its_tag_and_size() -> None:
    body = {**API_VERSIONS_BODY, "ZkMigrationReady": True}
    data = encode("ApiVersionsResponse", 3, body)
    assert data == API_VERSIONS_BYTES + bytes.fromhex("01" + "03" + "01" + "01")
    assert decode("ApiVersionsResponse", 3, data)["ZkMigrationReady"] is True


def test_an_unknown_tag_is_kept_and_written_back() -> None:
    data = HEARTBEAT_V4 + bytes.fromhex("01" + "09" + "03" + "616263")
    value = decode("HeartbeatRequest", 4, data)
    assert value[UNKNOWN_TAGGED_FIELDS] == {9: b"abc"}
    assert value["GroupId"] == "g" and value["MemberId"] == "m"
    assert encode("HeartbeatRequest", 4, value) == data


def test_a_struct_without_unknown_tags_has_no_unknown_tags_key() -> None:
    assert UNKNOWN_TAGGED_FIELDS not in decode("HeartbeatRequest", 4, HEARTBEAT_V4 + b"\x00")


def test_unknown_tags_are_written_in_ascending_order_among_the_known_ones() -> None:
    body = {
        **API_VERSIONS_BODY,
        "FinalizedFeaturesEpoch": 9,
        "ZkMigrationReady": True,
        UNKNOWN_TAGGED_FIELDS: {7: b"\xab", 5: b""},
    }
    data = encode("ApiVersionsResponse", 3, body)
    tagged = "04" + "01" + "08" + "0000000000000009" + "03" + "01" + "01" + "05" + "00" + "07" + "01" + "ab"
    assert data == API_VERSIONS_BYTES + bytes.fromhex(tagged)
    assert decode("ApiVersionsResponse", 3, data) == {
        **API_VERSIONS_BODY,
        "SupportedFeatures": [],
        "FinalizedFeaturesEpoch": 9,
        "FinalizedFeatures": [],
        "ZkMigrationReady": True,
        UNKNOWN_TAGGED_FIELDS: {5: b"", 7: b"\xab"},
    }


def test_unknown_tags_of_a_nested_struct_stay_with_that_struct() -> None:
    entry_with_tag = "0012" + "0000" + "0004" + "01" + "2a" + "02" + "beef"
    data = bytes.fromhex("0000" + "02" + entry_with_tag + "00000000" + "00")
    value = decode("ApiVersionsResponse", 3, data)
    assert value["ApiKeys"] == [
        {"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4, UNKNOWN_TAGGED_FIELDS: {42: b"\xbe\xef"}}
    ]
    assert UNKNOWN_TAGGED_FIELDS not in value
    assert encode("ApiVersionsResponse", 3, value) == data


def test_a_known_tag_at_a_version_without_its_field_is_an_error() -> None:
    spec = message_schema("BrokerHeartbeatRequest")  # OfflineLogDirs: tag 0, versions 1+; flexible from v0
    body = {"BrokerId": 1, "BrokerEpoch": 2, "CurrentMetadataOffset": 3, "WantFence": False, "WantShutDown": False}
    untagged = encode(spec, 0, body)[:-1]
    with pytest.raises(CodecError, match=r"tag 0 \(OfflineLogDirs\) is not valid at version 0") as raised:
        decode(spec, 0, untagged + bytes.fromhex("01" + "00" + "01" + "01"))
    assert (raised.value.message, raised.value.version) == ("BrokerHeartbeatRequest", 0)


def test_a_tagged_value_that_does_not_fill_its_size_is_an_error() -> None:
    data = API_VERSIONS_BYTES + bytes.fromhex("01" + "03" + "02" + "0100")
    with pytest.raises(CodecError, match="takes 1 of its 2 bytes") as raised:
        decode("ApiVersionsResponse", 3, data)
    assert raised.value.field == "ZkMigrationReady"


def test_a_tag_that_appears_twice_is_an_error() -> None:
    data = HEARTBEAT_V4 + bytes.fromhex("02" + "09" + "00" + "09" + "00")
    with pytest.raises(CodecError, match="tagged field 9 appears twice"):
        decode("HeartbeatRequest", 4, data)


def test_a_tag_size_past_the_end_is_an_error() -> None:
    with pytest.raises(CodecError, match="truncated"):
        decode("HeartbeatRequest", 4, HEARTBEAT_V4 + bytes.fromhex("01" + "09" + "05" + "6162"))


def test_unknown_tags_cannot_be_written_at_a_version_without_tagged_fields() -> None:
    body = {"GroupId": "g", "GenerationId": 3, "MemberId": "m", UNKNOWN_TAGGED_FIELDS: {1: b"x"}}
    with pytest.raises(CodecError, match="tagged fields were set, but version 3"):
        encode("HeartbeatRequest", 3, body)


def test_an_unknown_tag_cannot_reuse_a_known_tag() -> None:
    body = {**API_VERSIONS_BODY, UNKNOWN_TAGGED_FIELDS: {3: b"\x01"}}
    with pytest.raises(CodecError, match="uses the tag of a known field"):
        encode("ApiVersionsResponse", 3, body)


def _fetch_response(**partition: object) -> dict[str, object]:
    return {"Responses": [{"Topic": "t", "Partitions": [{"PartitionIndex": 0, **partition}]}]}


def test_a_struct_valued_tagged_field_is_written_only_away_from_its_default() -> None:
    plain = encode("FetchResponse", 12, _fetch_response())  # partitions' CurrentLeader: a tagged struct, tag 1
    at_default = _fetch_response(CurrentLeader={"LeaderId": -1, "LeaderEpoch": -1})
    assert encode("FetchResponse", 12, at_default) == plain
    data = encode("FetchResponse", 12, _fetch_response(CurrentLeader={"LeaderId": 4, "LeaderEpoch": 9}))
    assert len(data) == len(plain) + 11
    assert bytes.fromhex("01" + "01" + "09" + "00000004" + "00000009" + "00") in data
    decoded = decode("FetchResponse", 12, data)
    assert decoded["Responses"][0]["Partitions"][0]["CurrentLeader"] == {"LeaderId": 4, "LeaderEpoch": 9}


SYNTHETIC = parse_message(
    {
        "name": "SyntheticData",
        "type": "data",
        "validVersions": "0-1",
        "flexibleVersions": "1+",
        "fields": [
            {"name": "Count", "type": "uint32", "versions": "0+"},
            {"name": "Ratio", "type": "float64", "versions": "0+"},
            {"name": "Label", "type": "string", "versions": "1+", "nullableVersions": "1+",
             "taggedVersions": "1+", "tag": 0, "default": "x"},
            {"name": "Leader", "type": "Leader", "versions": "1+", "nullableVersions": "1+",
             "taggedVersions": "1+", "tag": 1, "fields": [
                {"name": "Id", "type": "int32", "versions": "1+", "default": "-1"},
            ]},
        ],
    }
)  # fmt: skip
"""What Kafka's schemas do not use today but its generator supports: uint32, a nullable tagged struct, a nullable
tagged string whose default is not null."""


def test_nullable_tagged_values_carry_a_null_marker() -> None:
    value = {"Count": 2**32 - 1, "Ratio": 0.5, "Label": None, "Leader": {"Id": 5}}
    data = encode(SYNTHETIC, 1, value)
    tagged = "02" + "00" + "01" + "00" + "01" + "06" + "01" + "00000005" + "00"
    assert data == bytes.fromhex("ffffffff" + "3fe0000000000000" + tagged)
    assert decode(SYNTHETIC, 1, data) == value
    null_leader = {"Count": 1, "Ratio": 0.0, "Label": "yz", "Leader": None}
    data = encode(SYNTHETIC, 1, null_leader)
    assert data.endswith(bytes.fromhex("02" + "00" + "03" + "03797a" + "01" + "01" + "00"))
    assert decode(SYNTHETIC, 1, data) == null_leader
    defaults = {"Count": 1, "Ratio": 0.0, "Label": "x", "Leader": {"Id": -1}}
    assert encode(SYNTHETIC, 1, defaults).endswith(b"\x00")
    assert decode(SYNTHETIC, 1, encode(SYNTHETIC, 1, defaults)) == defaults


def test_a_non_flexible_version_has_no_tagged_section() -> None:
    assert encode(SYNTHETIC, 0, {"Count": 1, "Ratio": 0.0}) == bytes.fromhex("00000001" + "0000000000000000")
    with pytest.raises(CodecError, match="field Label: a non-default value"):
        encode(SYNTHETIC, 0, {"Count": 1, "Ratio": 0.0, "Label": "y"})
