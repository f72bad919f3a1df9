"""Over real sockets: junk on one connection never stops the endpoint serving everyone else, nor writes anything.

The in-process hypothesis tests cover the input space; this test checks the same inputs end well on a running
endpoint: the server answers or closes the junk connection, and a fresh client is served at once.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Callable

import pytest
from kafka.protocol.metadata import MetadataRequest

from bench.fuzz import Mutator
from groupcoord.server.codec import RequestRejected, decode_request
from groupcoord.server.versions import ApiKey
from tests.host.conftest import commit
from tests.server.conftest import CoordinatorStack, RawClient

pytestmark = pytest.mark.integration

INPUTS = 60


def _drain_until_closed(client: RawClient, data: bytes) -> None:
    """Read whatever the server answers until it closes the connection (it must, after our end of stream), unless
    the input is a JoinGroup or SyncGroup that waits for the rest of its group, as Kafka's would."""
    may_wait = _waits_for_its_group(data)
    client.sock.settimeout(0.5 if may_wait else 5)
    while True:
        try:
            if not client.sock.recv(65536):
                return
        except ConnectionResetError:
            return
        except TimeoutError:
            if may_wait:
                return
            pytest.fail("the server neither answered nor closed within 5 s of our end of stream")


def _waits_for_its_group(data: bytes) -> bool:
    try:
        request = decode_request(data[4:])
    except RequestRejected:
        return False
    return request.api_key in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP)


def test_junk_on_one_connection_leaves_the_endpoint_serving_others(
    coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]
) -> None:
    stack = coordinator_stack({"t1": 1})
    mutator, rng = Mutator(11), random.Random(11)
    good = raw_client(stack.running.address)
    for index in range(INPUTS):
        data = mutator.input(index) if index % 3 else rng.randbytes(rng.randrange(1, 200))
        bad = raw_client(stack.running.address)
        bad.send_raw(data)
        bad.sock.shutdown(socket.SHUT_WR)
        _drain_until_closed(bad, data)
        bad.close()
        assert [t.name for t in good.request(MetadataRequest(version=1, topics=None)).topics] == ["t1"]
    persisted = stack.persisted()
    assert commit(good, "healthy", "t1", {0: 1})
    assert stack.persisted() == persisted + 1
