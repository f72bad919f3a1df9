"""File maintenance of the embedded topic logs: the lease holder's hook for its maintenance timer.

Every produce call commits one small file per touched partition, so a busy topic log accumulates thousands of
files, and every reader (offsets from statistics, fetches) pays for each one. :func:`maintain_topic_logs` compacts
each topic's log with :func:`groupcoord.storage.tables.compact_table`: files are bin-packed per partition (the
table is partitioned by ``partition``, and compaction never mixes partitions), so per-file ``offset`` statistics
stay tight and offsets are untouched. Producers keep producing meanwhile: a produce that loses its conditional
commit to the compaction re-reads and renumbers, as for any concurrent producer.

Run it off the event loop, e.g. ``await asyncio.to_thread(maintain_topic_logs, root, retention_hours=168)``.
"""

from __future__ import annotations

import logging

from deltalake.exceptions import DeltaError

from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import CompactionReport, compact_table
from groupcoord.topics.catalog import TopicCatalog

log = logging.getLogger("groupcoord.topics.maintenance")


def maintain_topic_logs(root: StateRoot, *, retention_hours: int, min_files: int = 2) -> list[CompactionReport]:
    """Compact, vacuum and checkpoint the log of every topic in the catalog; returns a report per topic log.

    A topic whose maintenance fails (a conflicting commit, an I/O error) is logged and skipped; the next run
    retries it.
    """
    reports: list[CompactionReport] = []
    for topic in TopicCatalog(root).list():
        try:
            report = compact_table(root.topic_path(topic.name), retention_hours=retention_hours,
                                   min_files=min_files)
        except (DeltaError, OSError) as exc:
            log.warning("maintenance of topic log %s failed, will retry: %s", topic.name, exc)
            continue
        if report is not None:
            reports.append(report)
    return reports
