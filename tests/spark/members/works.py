"""Picklable ``work(member, assignment)`` functions for the run_members tests; they journal what each member saw.

This module travels to the executors by value (cloudpickle), since the tests package is not installed there.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from kafka.structs import TopicPartition
from pyspark import TaskContext, cloudpickle

from groupcoord.member import GroupMember, MemberState

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]  # pyspark's copy is unannotated

STOP_TOGETHER_S = 120.0
"""How long a member that saw ``done`` waits for the others to see it too before it leaves anyway."""


def journal(directory: Path) -> list[dict[str, object]]:
    """Every observation the members wrote, in time order."""
    lines = [json.loads(line) for f in directory.glob("journal-*.jsonl") for line in f.read_text().splitlines()]
    return sorted(lines, key=lambda line: float(str(line["time"])))


class SplitThenLeave:
    """Each member journals every call; all leave once every member holds ``share`` partitions of one generation.

    Members agree through files in ``directory`` (the executors share the filesystem in local mode): a member's
    ``holding-<instance>`` file names the generation and partitions it holds while it holds its share; when all
    ``members`` files name the same generation and together cover ``partitions``, the ``done`` file ends the run.

    No member leaves before every member has seen ``done``: each marks ``stopped-<instance>`` in its last call and
    waits there (without polling) until all have. Otherwise the first to leave rebalances the others, and one slow
    to see ``done`` (a starved worker on a loaded machine) polls that later generation first and reports the
    leaver's partitions as its own: the assignments the run reports would not be the split that ended it.
    """

    def __init__(self, directory: str, *, members: int, share: int, partitions: int) -> None:
        self.directory = Path(directory)
        self.members = members
        self.share = share
        self.partitions = partitions

    def __call__(self, member: GroupMember, assignment: frozenset[TopicPartition]) -> bool:
        instance = member.config.group_instance_id
        generation = member.generation.generation_id
        self._journal(instance, generation, assignment)
        self.before_holding(member, assignment)
        holding = self.directory / f"holding-{instance}"
        if len(assignment) == self.share and member.state is MemberState.STABLE:
            holding.write_text(json.dumps({"generation": generation, "partitions": sorted(tp.partition
                                                                                            for tp in assignment)}))
        else:
            holding.unlink(missing_ok=True)
        done = self.directory / "done"
        if not done.exists() and self._all_hold_their_share():
            done.touch()
        if done.exists():
            self._stop_together(instance)
            return False
        time.sleep(0.05)
        return True

    def before_holding(self, member: GroupMember, assignment: frozenset[TopicPartition]) -> None:
        """A hook for fault injection; nothing here."""

    def _stop_together(self, instance: str | None) -> None:
        """Mark this member stopped and wait until every member is (a generous deadline, then leave anyway: the
        test's checks of the assignments say what went wrong)."""
        (self.directory / f"stopped-{instance}").touch()
        deadline = time.monotonic() + STOP_TOGETHER_S
        while len(list(self.directory.glob("stopped-*"))) < self.members and time.monotonic() < deadline:
            time.sleep(0.05)

    def _all_hold_their_share(self) -> bool:
        views = []
        for path in self.directory.glob("holding-*"):
            try:
                views.append(json.loads(path.read_text()))
            except (OSError, ValueError):  # being rewritten by its member right now
                return False
        covered = {p for view in views for p in view["partitions"]}
        return (len(views) == self.members and len({view["generation"] for view in views}) == 1
                and covered == set(range(self.partitions)))

    def _journal(self, instance: str | None, generation: int, assignment: frozenset[TopicPartition]) -> None:
        context = TaskContext.get()
        line = {"time": time.time(), "instance": instance, "pid": os.getpid(), "generation": generation,
                "attempt": context.attemptNumber() if context is not None else -1,
                "partitions": sorted(tp.partition for tp in assignment)}
        with (self.directory / f"journal-{instance}.jsonl").open("a") as out:
            out.write(json.dumps(line) + "\n")


class KillVictimOnce(SplitThenLeave):
    """:class:`SplitThenLeave`, but the member ``victim`` kills its own Python worker (SIGKILL) the first time it
    owns partitions; the ``killed`` marker file makes the retried task live."""

    def __init__(self, directory: str, *, victim: str, members: int, share: int, partitions: int) -> None:
        super().__init__(directory, members=members, share=share, partitions=partitions)
        self.victim = victim

    def before_holding(self, member: GroupMember, assignment: frozenset[TopicPartition]) -> None:
        marker = self.directory / "killed"
        if member.config.group_instance_id == self.victim and assignment and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
