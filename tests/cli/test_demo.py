"""The ``groupcoord demo`` timeline: three members, one paused past its session, two generations."""

from __future__ import annotations

import subprocess
import sys

from groupcoord.cli.demo import Demo


def test_demo_shows_both_generations_with_members_leader_and_assignment() -> None:
    """Generation 1 has three members over six partitions; after consumer-c pauses, generation 2 has two."""
    lines: list[str] = []
    demo = Demo(lines.append)
    demo.run()
    text = "\n".join(lines)
    assert "generation 1: 3 members, leader consumer-a" in text
    assert "consumer-c  (consumer-c-3 ) events-2, events-5" in text
    assert "consumer-c's session expired" in text
    assert "generation 2: 2 members, leader consumer-a" in text
    assert "consumer-b  (consumer-b-2 ) events-1, events-3, events-5" in text
    group = demo.coordinator.group("demo-group")
    assert group is not None and group.generation_id == 2 and group.size == 2


def test_demo_command_runs() -> None:
    """``python -m groupcoord demo`` (what ``make run`` calls) exits 0 and prints the timeline on stdout."""
    result = subprocess.run([sys.executable, "-m", "groupcoord", "demo"], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "generation 2: 2 members" in result.stdout
    assert result.stderr == ""
