"""Every schema at every valid version: a generated value (every field present at the version set to a value other
than its default, nested structs and arrays included, nullable fields sometimes null) encodes and decodes back
unchanged, and requests and responses do so inside whole frames too."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.protocol.schemas import (
    decode,
    decode_request,
    decode_response,
    encode,
    encode_request,
    encode_response,
    is_default,
    load_schemas,
    message_schema,
)
from groupcoord.protocol.schemas.model import StructSpec
from tests.protocol_schemas.values import SampleValues

WITH_VERSIONS = sorted(name for name, spec in load_schemas().items() if not spec.valid_versions.empty)


def versions_of(name: str) -> range:
    """Every valid version of the schema called ``name``."""
    valid = message_schema(name).valid_versions
    return range(valid.lowest, valid.highest + 1)


@pytest.mark.parametrize("name", WITH_VERSIONS)
def test_a_generated_value_round_trips_at_every_version(name: str) -> None:
    spec = message_schema(name)
    for version in versions_of(name):
        value = SampleValues(seed=version).message(spec, version)
        data = encode(spec, version, value)
        back = decode(spec, version, data)
        assert back == value, f"{name} v{version}: decoded value differs"
        assert encode(spec, version, back) == data, f"{name} v{version}: re-encoding differs"


@pytest.mark.parametrize("name", [name for name in WITH_VERSIONS if message_schema(name).kind == "request"])
def test_a_request_round_trips_in_a_frame_at_every_version(name: str) -> None:
    spec = message_schema(name)
    assert spec.api_key is not None
    for version in versions_of(name):
        value = SampleValues(seed=version).message(spec, version)
        client_id = None if version % 2 else f"client-{version}"
        frame = encode_request(spec.api_key, version, 1000 + version, client_id, value)
        header, body = decode_request(frame)
        assert header == {
            "RequestApiKey": spec.api_key,
            "RequestApiVersion": version,
            "CorrelationId": 1000 + version,
            "ClientId": client_id,
        }, f"{name} v{version}"
        assert body == value, f"{name} v{version}: decoded body differs"


@pytest.mark.parametrize("name", [name for name in WITH_VERSIONS if message_schema(name).kind == "response"])
def test_a_response_round_trips_in_a_frame_at_every_version(name: str) -> None:
    spec = message_schema(name)
    assert spec.api_key is not None
    for version in versions_of(name):
        value = SampleValues(seed=version).message(spec, version)
        frame = encode_response(spec.api_key, version, -version, value)
        header, body = decode_response(spec.api_key, version, frame)
        assert header == {"CorrelationId": -version}, f"{name} v{version}"
        assert body == value, f"{name} v{version}: decoded body differs"


def test_the_generated_values_hold_no_default_but_null() -> None:
    """The round trips above would not notice a field the codec dropped if the value held its default."""
    for name in WITH_VERSIONS:
        spec = message_schema(name)
        for version in versions_of(name):
            _assert_no_defaults(spec.struct, SampleValues(seed=version).message(spec, version), version, name)


def _assert_no_defaults(struct: StructSpec, value: dict[str, Any], version: int, where: str) -> None:
    for field in struct.fields:
        item = value[field.name]
        if version not in field.versions or item is None:
            continue
        assert not is_default(field, item), f"{where}.{field.name} v{version} holds its default"
        if field.struct is not None:
            for element in item if field.is_array else [item]:
                _assert_no_defaults(field.struct, element, version, f"{where}.{field.name}")
