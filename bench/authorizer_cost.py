"""What the authorizer costs per request: the authorization layer (``groupcoord/server/authorization.py``) around an
adapter that answers at once, against the same adapter with the authorizer off, on requests decoded from real frames.

Requests: a Heartbeat (one group check), an OffsetCommit of 10 topics (a group check and ten topic checks), and a
Metadata naming 10 topics (ten checks). ACLs: 10,000 literal topic bindings of 50 users, 100 prefixed ones, alice's
ACLs on the requests' group and topics among them. Figures: CPU microseconds of this process per request (CPU time,
not wall time: the machine this runs on is shared), the least of :data:`ROUNDS` rounds of :data:`REQUESTS` requests
each (the least: other processes only ever add to a round), and the pure decision alone.

Command: ``python -m bench.run authorizer_cost`` (part of ``make bench``; the figures are quoted in
docs/security.md).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from bench.results_io import Check, write_result
from groupcoord.protocol.schemas import encode_request
from groupcoord.security.acl_store import AclStore
from groupcoord.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from groupcoord.security.authorizer import Authorizer, AuthorizerConfig
from groupcoord.server.api import DISABLED, BrokerAddress, RequestContext
from groupcoord.server.authorization import RULES, AuthorizedHandler
from groupcoord.server.codec import decode_request
from groupcoord.server.schema_apis import SchemaResponse
from groupcoord.server.topics import StaticTopics
from groupcoord.server.versions import ApiKey

ROUNDS = 9
ADDED_TARGET_US = 50.0
"""The most the authorizer may add to one request's CPU (about a tenth of an OffsetCommit of 10 topics in serve)."""
DECISION_TARGET_US = 10.0
REQUESTS = 2000
TOPICS = [f"topic-{i}" for i in range(10)]
ENABLED = AuthorizerConfig(enabled=True)


class _Instant:
    """An adapter that answers at once with a response naming the request's topics."""

    def __init__(self, response: Any) -> None:
        self._response = response

    async def handle(self, ctx: RequestContext) -> Any:
        return self._response

    def error_response(self, ctx: RequestContext, error: Any) -> Any:
        return self._response


def _acls() -> AclStore:
    store = AclStore()
    for i in range(10_000):
        store.add(AclBinding(ResourceType.TOPIC, f"t{i}", PatternType.LITERAL, f"User:u{i % 50}", "*",
                             Operation.READ, Permission.ALLOW))
    for i in range(100):
        store.add(AclBinding(ResourceType.TOPIC, f"p{i}-", PatternType.PREFIXED, "User:u1", "*", Operation.WRITE,
                             Permission.ALLOW))
    for kind, name in [(ResourceType.GROUP, "g"), *((ResourceType.TOPIC, t) for t in TOPICS)]:
        store.add(AclBinding(kind, name, PatternType.LITERAL, "User:alice", "*", Operation.READ, Permission.ALLOW))
    return store


def _context(api: ApiKey, version: int, body: dict[str, Any], config: AuthorizerConfig) -> RequestContext:
    request = decode_request(encode_request(api, version, 1, "bench", body))
    return RequestContext(request, BrokerAddress("127.0.0.1", 9092), "/127.0.0.1", "User:alice", config)


def _cases() -> dict[str, tuple[ApiKey, int, dict[str, Any], Any]]:
    commit = {"GroupId": "g", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "Topics": [
        {"Name": t, "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1, "CommittedMetadata": ""}]}
        for t in TOPICS]}
    metadata_response = SchemaResponse(int(ApiKey.METADATA), 12, {"Topics": []})
    return {
        "Heartbeat": (ApiKey.HEARTBEAT, 4, {"GroupId": "g", "GenerationId": 1, "MemberId": "m"}, object()),
        "OffsetCommit, 10 topics": (ApiKey.OFFSET_COMMIT, 8, commit, SchemaResponse(int(ApiKey.OFFSET_COMMIT), 8,
                                                                                      {"Topics": []})),
        "Metadata, 10 topics": (ApiKey.METADATA, 12, {"Topics": [{"Name": t, "TopicId": uuid.UUID(int=0)}
                                                                 for t in TOPICS]}, metadata_response),
    }


async def _per_request_us(handler: AuthorizedHandler, ctx: RequestContext) -> float:
    rounds = []
    for _ in range(ROUNDS):
        started = time.process_time()
        for _ in range(REQUESTS):
            await handler.handle(ctx)
        rounds.append((time.process_time() - started) / REQUESTS * 1e6)
    return min(rounds)


async def _measure() -> tuple[list[dict[str, Any]], float, int]:
    acls = _acls()
    topics = StaticTopics({t: 1 for t in TOPICS})
    rows = []
    for name, (api, version, body, response) in _cases().items():
        handler = AuthorizedHandler(_Instant(response), RULES[api], acls, topics)
        off = await _per_request_us(handler, _context(api, version, body, DISABLED))
        on = await _per_request_us(handler, _context(api, version, body, ENABLED))
        rows.append({"request": name, "authorizer_off_us": round(off, 2), "authorizer_on_us": round(on, 2),
                     "added_us": round(on - off, 2)})
        print(rows[-1], flush=True)
    authorizer = Authorizer(acls, ENABLED)
    rounds = []
    for _ in range(ROUNDS):
        started = time.process_time()
        for i in range(REQUESTS * 10):
            authorizer.allowed("User:alice", "127.0.0.1", Operation.DESCRIBE, ResourceType.TOPIC, TOPICS[i % 10])
        rounds.append((time.process_time() - started) / (REQUESTS * 10) * 1e6)
    print(f"one decision, {len(acls)} bindings: {min(rounds):.2f} us")
    return rows, min(rounds), len(acls)


def main(full: bool = False) -> None:
    """Measure and write ``bench/results/authorizer_cost.json``."""
    rows, decision_us, bindings = asyncio.run(_measure())
    checks = [Check("authorizer_cost", f"added_us[{row['request']}]", "speed", row["added_us"], "<=", ADDED_TARGET_US)
              for row in rows]
    checks.append(Check("authorizer_cost", "one_decision_us", "speed", round(decision_us, 2), "<=", DECISION_TARGET_US))
    write_result(
        "authorizer_cost",
        title="What the authorizer costs per request (CPU microseconds, in process)",
        rows=rows,
        checks=checks,
        summary={"one_decision_us": round(decision_us, 2), "bindings": bindings, "rounds": ROUNDS,
                 "requests_per_round": REQUESTS},
        notes="The authorization layer around an adapter that answers at once, with the authorizer off and on, on "
              "requests decoded from real frames; CPU time of the process per request, the least of the rounds "
              "(other processes only add to a round). 10,000 literal topic bindings of 50 users and 100 prefixed "
              "ones, the requesting user's ACLs among them. No peer: Kafka's authorizer runs inside its broker. "
              f"Targets (ours): at most {ADDED_TARGET_US} us added to a request (serve spends ~40 us of CPU per "
              f"committed offset, so an OffsetCommit of 10 topics costs it ~400 us) and {DECISION_TARGET_US} us a "
              "decision.",
    )


if __name__ == "__main__":
    main()
