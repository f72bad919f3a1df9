"""A scenario :class:`~tests.clients.scenarios.Client` in another process (kafkajs on node, Kafka's Java clients),
driven over JSON lines on its stdin and stdout.

Each request is one line ``{"id": N, "op": ..., ...}``; the process answers each with one line
``{"id": N, "result": ...}`` or ``{"id": N, "error": "..."}`` (an error of the call itself, not a Kafka error that
the operation reports as its result). The operations mirror :class:`~tests.clients.scenarios.Client` and
:class:`~tests.clients.scenarios.Member`: ``join`` (returns a member handle), ``assignment``, ``assignments``,
``commit``, ``committed``, ``hold``, ``close``, ``list_groups``, ``describe``, ``group_offsets``, ``reset``, ``delete``
and ``exit``. ``tests/clients/node/group_client.js`` and ``tests/clients/java/GroupClient.java`` implement them, but
for ``hold``, which only the static-membership scenario calls and kafkajs (no static members) never needs.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.clients.scenarios import DescribedMember, Description

CALL_TIMEOUT_S = 60.0


class LineProcess:
    """The client process and its request/answer lines (one request at a time)."""

    def __init__(self, command: Sequence[str], *, log_path: Path, cwd: Path | None = None) -> None:
        self._log = log_path.open("w")
        self.process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._log, text=True, cwd=cwd)
        self.log_path = log_path
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def call(self, op: str, **fields: Any) -> Any:
        """Send one request and return its result; an error answer, or the process dying, fails the test."""
        assert self.process.stdin is not None and self.process.stdout is not None
        with self._lock:
            request_id = next(self._ids)
            self.process.stdin.write(json.dumps({"id": request_id, "op": op, **fields}) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        assert line, f"the client process died during {op}; its log:\n{self.log_tail()}"
        answer = json.loads(line)
        assert answer.get("id") == request_id, answer
        assert "error" not in answer, f"{op} failed in the client process: {answer['error']}"
        return answer.get("result")

    def log_tail(self, lines: int = 40) -> str:
        """The end of the process's stderr."""
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        """Ask the process to exit (it closes what is open); kill it if it does not within 30 s."""
        try:
            if self.process.poll() is None:
                self.call("exit")
                self.process.wait(timeout=30)
        except (AssertionError, BrokenPipeError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=10)
        finally:
            self._log.close()


class LineMember:
    """A :class:`~tests.clients.scenarios.Member` living in a :class:`LineProcess`."""

    def __init__(self, process: LineProcess, handle: str) -> None:
        self._process = process
        self._handle = handle

    def assignment(self) -> frozenset[int]:
        """The partitions it owns now."""
        return frozenset(self._process.call("assignment", member=self._handle))

    def owned(self) -> list[str]:
        """What it owns now, as ``<topic>-<partition>`` names (the Java client only)."""
        return sorted(self._process.call("owned", member=self._handle))

    def assignments(self) -> int:
        """How many assignments it received."""
        return int(self._process.call("assignments", member=self._handle))

    def commit(self, offsets: Mapping[int, int]) -> str | None:
        """A synchronous commit: ``None`` or the error."""
        result = self._process.call("commit", member=self._handle, offsets={str(p): o for p, o in offsets.items()})
        return None if result is None else str(result)

    def committed(self, partitions: Iterable[int]) -> dict[int, int | None]:
        """The committed offsets."""
        found = self._process.call("committed", member=self._handle, partitions=list(partitions))
        return {int(p): offset for p, offset in found.items()}

    def hold(self) -> None:
        """Stop polling (the Java client only: see the module docstring)."""
        self._process.call("hold", member=self._handle)

    def close(self) -> None:
        """Close the consumer."""
        self._process.call("close", member=self._handle)


class LineClient:
    """A client library in another process (see the module docstring)."""

    def __init__(self, process: LineProcess, *, lacks: Mapping[str, str], fenced_error: str = "") -> None:
        self.process = process
        self.lacks = lacks
        self.fenced_error = fenced_error
        self._members: list[LineMember] = []

    def join(self, group: str, name: str, *, instance_id: str | None = None, pattern: str | None = None
             ) -> LineMember:
        """A new consumer in the process, subscribed to the client's topic or (the Java client, consumer protocol)
        to a regular expression ``pattern``."""
        member = LineMember(self.process, self.process.call("join", group=group, name=name, instance_id=instance_id,
                                                            pattern=pattern))
        self._members.append(member)
        return member

    def close_members(self) -> None:
        """Close every consumer joined so far (closing one twice is a no-op in the process), keeping the process and
        its admin client for the next scenario."""
        members, self._members = self._members, []
        for member in members:
            member.close()

    def list_groups(self) -> dict[str, str | None]:
        """Every group and its state."""
        return dict(self.process.call("list_groups"))

    def describe(self, group: str) -> Description:
        """The group's state and members."""
        found = self.process.call("describe", group=group)
        return Description(found["state"], tuple(
            DescribedMember(m["client_id"], m["instance_id"], frozenset(m["partitions"])) for m in found["members"]))

    def group_offsets(self, group: str) -> dict[int, int]:
        """The group's committed offsets of the topic."""
        return {int(p): int(o) for p, o in self.process.call("group_offsets", group=group).items()}

    def reset(self, group: str, to: str | int) -> None:
        """Reset the group's offsets."""
        self.process.call("reset", group=group, to=to)

    def delete(self, group: str) -> str | None:
        """Delete the group: ``None`` or the error."""
        result = self.process.call("delete", group=group)
        return None if result is None else str(result)

    def close(self) -> None:
        """End the process."""
        self.process.close()
