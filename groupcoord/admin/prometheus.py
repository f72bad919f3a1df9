"""The checkpoint report as a Prometheus textfile (node_exporter's textfile collector), with kafka_exporter's
metric and label names, so existing dashboards and alerts work unchanged.

Metrics: ``kafka_consumergroup_current_offset`` and ``kafka_consumergroup_lag`` per (consumergroup, topic,
partition), ``kafka_consumergroup_lag_sum`` per (consumergroup, topic), ``kafka_consumergroup_members`` per
consumergroup; plus ``groupcoord_consumergroup_status`` (0 OK, 1 WARN, 2 ERR) per consumergroup. The file is
replaced atomically (written beside it, then renamed), so a scrape never sees half a file.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from groupcoord.admin.checkpoint import GroupReport

_STATUS_VALUE = {"OK": 0, "WARN": 1, "ERR": 2}

_METRICS = (
    ("kafka_consumergroup_current_offset", "Committed offset of a consumer group in a topic partition."),
    ("kafka_consumergroup_lag", "Records between a consumer group's committed offset and the log end of a partition."),
    ("kafka_consumergroup_lag_sum", "Lag of a consumer group summed over the partitions of a topic."),
    ("kafka_consumergroup_members", "Members of a consumer group in its latest generation."),
    ("groupcoord_consumergroup_status", "Burrow status of a consumer group: 0 OK, 1 WARN, 2 ERR."),
)


def _labels(**labels: object) -> str:
    def escape(value: object) -> str:
        return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in sorted(labels.items())) + "}"


def render(reports: Sequence[GroupReport]) -> str:
    """The textfile content for ``reports``."""
    samples: dict[str, list[str]] = defaultdict(list)
    for group in reports:
        lag_sums: dict[str, int] = defaultdict(int)
        for p in group.partitions:
            labels = _labels(consumergroup=group.group_id, topic=p.topic, partition=p.partition)
            if p.offset is not None:
                samples["kafka_consumergroup_current_offset"].append(f"{labels} {p.offset}")
            if p.lag is not None:
                samples["kafka_consumergroup_lag"].append(f"{labels} {p.lag}")
                lag_sums[p.topic] += p.lag
        for topic, total in sorted(lag_sums.items()):
            labels = _labels(consumergroup=group.group_id, topic=topic)
            samples["kafka_consumergroup_lag_sum"].append(f"{labels} {total}")
        samples["kafka_consumergroup_members"].append(f"{_labels(consumergroup=group.group_id)} {group.members}")
        samples["groupcoord_consumergroup_status"].append(
            f"{_labels(consumergroup=group.group_id)} {_STATUS_VALUE[group.status.status]}")
    lines = []
    for name, help_text in _METRICS:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        lines += [f"{name}{sample}" for sample in samples[name]]
    return "\n".join(lines) + "\n"


def write_textfile(path: str | Path, reports: Sequence[GroupReport]) -> Path:
    """Write :func:`render` of ``reports`` to ``path`` atomically; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(render(reports), encoding="utf-8")
    tmp.replace(target)
    return target
