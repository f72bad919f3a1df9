"""Assembling the dispatcher: which adapter answers which API, and the ranges ApiVersions advertises for them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.adapters.api_versions import ApiVersionsAdapter
from groupcoord.server.adapters.find_coordinator import FindCoordinatorAdapter
from groupcoord.server.adapters.metadata import MetadataAdapter
from groupcoord.server.api import ApiHandler, Dispatcher
from groupcoord.server.topics import StaticTopics, TopicSource
from groupcoord.server.versions import SUPPORTED_VERSIONS, ApiKey, VersionRange


def _serving() -> ErrorCode:
    return Errors.NONE


def build_dispatcher(
    *,
    topics: TopicSource | None = None,
    availability: Callable[[], ErrorCode] = _serving,
    extra: Mapping[ApiKey, ApiHandler] | None = None,
    ranges: Mapping[ApiKey, VersionRange] = SUPPORTED_VERSIONS,
) -> Dispatcher:
    """A dispatcher for ApiVersions, Metadata, FindCoordinator plus the adapters in ``extra``.

    ApiVersions advertises exactly the APIs the dispatcher serves, at their ``ranges``.
    """
    handlers: dict[ApiKey, ApiHandler] = {
        ApiKey.METADATA: MetadataAdapter(topics if topics is not None else StaticTopics()),
        ApiKey.FIND_COORDINATOR: FindCoordinatorAdapter(availability=availability),
    }
    handlers.update(extra or {})
    served = {key: ranges[key] for key in (*handlers, ApiKey.API_VERSIONS)}
    handlers[ApiKey.API_VERSIONS] = ApiVersionsAdapter(served)
    return handlers


def served_ranges(dispatcher: Dispatcher, ranges: Mapping[ApiKey, VersionRange] = SUPPORTED_VERSIONS) -> dict[
    ApiKey, VersionRange
]:
    """The advertised ranges restricted to the APIs ``dispatcher`` serves."""
    return {key: r for key, r in ranges.items() if key in dispatcher}
