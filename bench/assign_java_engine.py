"""The like-for-like side of the comparison with Kafka's Java assignors: the coordinator's driver engine alone.

Kafka's harness times ``assign()`` on prebuilt Java objects (a ``Cluster`` and a ``GroupSubscription``, or KIP-848's
``GroupSpec``). The same work in groupcoord is what the coordinator's driver engine does for a group
(:func:`groupcoord.assignors.algorithms.assign`): from the group's inputs, prebuilt as its ``Member`` and
``Partition`` values, to the partition -> member answer, checks and derived facts included (a
:class:`~groupcoord.assignors.algorithms.Group` is built inside the timed call, as ``assign()`` derives its own
structures). A batch of groups loops over them, as the harness does. No Spark: that is the whole-job figure of
:mod:`bench.assign_java`'s other columns.

:func:`run_engine` runs it in a fresh Python process (``python -m bench.assign_java_engine``), so its first call is
as cold as the JVM's.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow as pa

from bench.assign_java_cases import Case, Generated, read_case, write_assignment
from bench.assign_java_peer import RESULT_PREFIX, Measured, peak_rss_mib, run_command
from groupcoord.assignors.algorithms import Claim, Group, Member, Partition, assign

Inputs = list[tuple[str, tuple[Member, ...], tuple[Partition, ...], tuple[Claim, ...]]]
"""Each group's id and its prebuilt members, partitions and claims."""


def run_engine(case_file: Path, assignor: str, *, warmup: int, runs: int, output: Path | None = None,
               timeout: float | None = None) -> Measured:
    """The driver engine's ``assignor`` on ``case_file`` in a fresh Python process: the first call (its assignment
    written to ``output``), then ``warmup`` untimed calls and ``runs`` timed ones (as :func:`run_java`)."""
    command = [sys.executable, "-m", "bench.assign_java_engine", str(case_file), assignor, str(warmup), str(runs),
               str(output) if output else "-"]
    lines = [line[len(RESULT_PREFIX):] for line in run_command(command, timeout).splitlines()
             if line.startswith(RESULT_PREFIX)]
    return Measured.from_json(lines[-1], output)


def prebuilt(case: Case) -> Inputs:
    """The case's groups as the engine's input values (the harness's ``generate`` gives the same groups)."""
    if isinstance(case, Generated):
        topics = tuple(f"t{t}" for t in range(case.topics))
        members = tuple(Member(f"member-{m}", topics) for m in range(case.members))
        partitions = tuple(Partition(topic, p) for topic in topics for p in range(case.partitions // case.topics))
        return [(f"g{g}", members, partitions, ()) for g in range(case.groups)]
    return [(group.group_id,
             tuple(Member(m.member_id, tuple(group.topics) if m.topics is None else tuple(m.topics), m.instance_id)
                   for m in group.members),
             tuple(Partition(topic, p) for topic, count in group.topics.items() for p in range(count)),
             tuple(Claim(member, topic, partition, generation)
                   for member, topic, partition, generation in group.owned))
            for group in case]


Answers = list[tuple[str, dict[tuple[str, int], str]]]
"""Each group's id and its partition -> member answer."""


def call(inputs: Inputs, assignor: str) -> tuple[Answers, float]:
    """One assignment of every group of ``inputs`` and its seconds."""
    started = time.perf_counter()
    answers = [(group_id, assign(Group(members, partitions, claims, group_id), assignor))
               for group_id, members, partitions, claims in inputs]
    return answers, time.perf_counter() - started


def _table(answers: Answers) -> pa.Table:
    rows = [{"group_id": group_id, "member_id": member, "topic": topic, "partition": partition}
            for group_id, placed in answers for (topic, partition), member in placed.items()]
    return pa.Table.from_pylist(rows, pa.schema([("group_id", pa.string()), ("member_id", pa.string()),
                                                 ("topic", pa.string()), ("partition", pa.int32())]))


def _main(argv: list[str]) -> None:
    case_file, assignor, warmup, runs, output = argv
    inputs = prebuilt(read_case(Path(case_file).read_text(encoding="utf-8")))
    answers, cold = call(inputs, assignor)
    if output != "-":
        write_assignment(Path(output), _table(answers))
    del answers
    for _ in range(int(warmup)):
        call(inputs, assignor)
    warm = [call(inputs, assignor)[1] for _ in range(int(runs))]
    print(RESULT_PREFIX + json.dumps({"cold_s": cold, "warm_s": warm, "peak_rss_mib": round(peak_rss_mib(), 1)}),
          flush=True)


if __name__ == "__main__":
    _main(sys.argv[1:])
