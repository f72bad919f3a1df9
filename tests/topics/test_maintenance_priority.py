"""Topic-log maintenance runs on its own lower-priority thread, off the threads that commit and acknowledge."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from groupcoord.state_root import StateRoot
from groupcoord.storage.background import BACKGROUND_NICE
from groupcoord.storage.maintenance import MaintenanceReport, Policy
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog
from groupcoord.topics import maintenance as topic_maintenance


def test_topic_log_maintenance_runs_on_a_background_thread_at_the_background_priority(
        root: StateRoot, catalog: TopicCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog.create("events", 1)
    for n in range(3):
        TopicLog(root, "events").produce([ProducerRecord(b"v%d" % n, partition=0)])
    ran_on: list[tuple[str, int]] = []
    real = topic_maintenance.maintain_topic_log

    def observed(path: str | Path, rules: Policy, **kwargs: object) -> MaintenanceReport | None:
        ran_on.append((threading.current_thread().name,
                       os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        return real(path, rules, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(topic_maintenance, "maintain_topic_log", observed)
    (report,) = topic_maintenance.maintain_topic_logs(root, retention_hours=1)
    assert report.compacted_files == 3
    ((thread, niceness),) = ran_on
    assert thread.startswith("groupcoord-topic-maintenance") and niceness == BACKGROUND_NICE
