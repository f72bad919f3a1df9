"""Produce's waiters are woken once per commit: the requests a topic's commit answers share one wake-up of the
event loop, however many they are."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from groupcoord.server.adapters.produce import _Wakeups
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicsConfig
from groupcoord.topics.appender import TopicAppender


def test_the_requests_of_one_commit_are_answered_with_one_wakeup_of_the_loop(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(root).create("events", 3)
    appender = TopicAppender(root, config=TopicsConfig(produce_linger_ms=200))  # every request joins one commit

    async def produce() -> int:
        loop = asyncio.get_running_loop()
        wakeups = _Wakeups(loop)
        woken = 0
        real = loop.call_soon_threadsafe

        def counted(callback: Any, *args: Any) -> Any:
            nonlocal woken
            woken += 1
            return real(callback, *args)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign,assignment]
        requests = [[appender.append("events", partition, [ProducerRecord(b"r%d-%d" % (request, partition))])
                     for partition in range(3)] for request in range(8)]
        await asyncio.wait_for(asyncio.gather(*(wakeups.all_done(futures) for futures in requests)), 30)
        assert all(future.result().base_offset == request for request, futures in enumerate(requests)
                   for future in futures)
        return woken

    try:
        assert asyncio.run(produce()) == 1
        assert appender.stats.commits == 1
    finally:
        appender.close()
