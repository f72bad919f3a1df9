"""ApiVersions: the advertised version ranges (always answered with response header v0)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kafka.protocol.metadata import ApiVersionsResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext
from groupcoord.server.versions import ApiKey, VersionRange

# KIP-511: client software names and versions must look like this, or the request is invalid.
_SOFTWARE_FIELD = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_keys(ranges: Mapping[ApiKey, VersionRange]) -> list[Any]:
    return [
        ApiVersionsResponse.ApiVersion(api_key=int(key), min_version=r.min_version, max_version=r.max_version)
        for key, r in sorted(ranges.items())
    ]


def error_v0_response(error: ErrorCode, ranges: Mapping[ApiKey, VersionRange]) -> Any:
    """An ApiVersions error answer: always v0, since clients decode every ApiVersions error as v0."""
    return ApiVersionsResponse(version=0, error_code=error.code, api_keys=_api_keys(ranges))


def unsupported_version_response(ranges: Mapping[ApiKey, VersionRange]) -> Any:
    """The answer to an ApiVersions request at a version we do not speak: v0, UNSUPPORTED_VERSION, our ranges."""
    return error_v0_response(Errors.UNSUPPORTED_VERSION, ranges)


class ApiVersionsAdapter:
    """Answers ApiVersions with ``ranges``."""

    def __init__(self, ranges: Mapping[ApiKey, VersionRange]) -> None:
        self._ranges = dict(ranges)

    async def handle(self, ctx: RequestContext) -> Any:
        """The advertised ranges, or INVALID_REQUEST for malformed KIP-511 client software fields (v3+)."""
        if ctx.api_version >= 3 and not all(
            _SOFTWARE_FIELD.fullmatch(value or "")
            for value in (ctx.body.client_software_name, ctx.body.client_software_version)
        ):
            return self.error_response(ctx, Errors.INVALID_REQUEST)
        return ctx.response(error_code=Errors.NONE.code, api_keys=_api_keys(self._ranges), throttle_time_ms=0)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """A v0 response carrying ``error`` and, as Kafka does, the ranges."""
        return error_v0_response(error, self._ranges)
