"""The wire fuzzer against the pre-authentication state of a SASL listener, over real sockets: whatever an
unauthenticated client sends (the fuzzer's mutations of every served API's seed frames), nothing but ApiVersions
reaches an adapter, and an unauthenticated client learns nothing else."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from bench.fuzz import BENCH_SEED, Mutator
from groupcoord.server.versions import ApiKey
from tests.security.conftest import SaslListener

pytestmark = pytest.mark.integration

INPUTS = 400


def _send_and_drain(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except (ConnectionResetError, BrokenPipeError):
            pass


def test_fuzzed_frames_before_authentication_reach_nothing_but_api_versions(
        sasl_listener: Callable[..., SaslListener]) -> None:
    listener = sasl_listener(delay_ms=0)
    mutator = Mutator(BENCH_SEED)
    # Every seed as it is (valid requests of every served API), then mutations of them.
    for data in [*mutator.seeds, *mutator.inputs(INPUTS)]:
        _send_and_drain(listener.running.address.port, data)
    reached = {key for key, _ in listener.recording.seen}
    assert reached <= {ApiKey.API_VERSIONS}
    assert listener.running.endpoint.authentication.succeeded == 0
    assert listener.running.endpoint.authentication.failed > len(mutator.seeds) // 2
