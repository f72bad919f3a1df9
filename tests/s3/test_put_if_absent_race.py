"""The S3 server's ``If-None-Match: *`` put is atomic: of many writers creating the same key at once, from threads
and from processes, exactly one wins and every other one gets 412, and the object holds the winner's bytes.

Every commit on S3 rests on this (moto's server, for one, checks the precondition without a lock, and two
simultaneous creates can both win there), so it is checked here before the other tests rely on it.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from groupcoord.storage import objects
from groupcoord.storage.location import TableLocation, parse_location

KEYS = 12
THREADS = 8
PROCESSES = 3

pytestmark = pytest.mark.integration


def _race(location: TableLocation, writer: str, start_at: float) -> list[str]:
    """Create every key of the race as ``writer`` once the wall clock reaches ``start_at``; the keys it won."""
    time.sleep(max(0.0, start_at - time.time()))
    return [key for key in (f"race/{k:03d}.json" for k in range(KEYS))
            if objects.put_if_absent(location, key, writer.encode())]


def _process_race(uri: str, env: dict[str, str], writer: str, start_at: float) -> list[str]:
    """:func:`_race` in a spawned process, which builds its own client from ``env``."""
    return _race(parse_location(uri, environ=env), writer, start_at)


def test_only_one_of_many_concurrent_creates_of_a_key_wins(s3_env: dict[str, str], s3_bucket: str) -> None:
    location = parse_location(f"s3://{s3_bucket}/table")
    start_at = time.time() + 2.0  # past the spawned processes' start-up, so all writers overlap
    won: dict[str, list[str]] = {}
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as pool:
        pending = [(f"process-{i}", pool.apply_async(_process_race, (location.uri, s3_env, f"process-{i}",
                                                                     start_at)))
                   for i in range(PROCESSES)]
        barrier = threading.Barrier(THREADS)

        def thread_race(writer: str) -> list[str]:
            barrier.wait()
            return _race(location, writer, start_at)

        with ThreadPoolExecutor(THREADS) as threads:
            writers = [f"thread-{i}" for i in range(THREADS)]
            won.update(zip(writers, threads.map(thread_race, writers), strict=True))
        won.update((writer, result.get(60)) for writer, result in pending)

    winners: dict[str, list[str]] = {}
    for writer, keys in won.items():
        for key in keys:
            winners.setdefault(key, []).append(writer)
    assert sorted(winners) == [f"race/{k:03d}.json" for k in range(KEYS)]
    assert {key: len(names) for key, names in winners.items() if len(names) != 1} == {}
    for key, (writer,) in winners.items():
        assert objects.read(location, key) == writer.encode()
