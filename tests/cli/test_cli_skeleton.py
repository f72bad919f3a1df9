"""The CLI's shared behaviour: version, usage errors, one-line errors and exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord import __version__
from groupcoord.cli.main import main


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groupcoord", *args], capture_output=True, text=True, timeout=60)


def test_version_through_python_dash_m() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"groupcoord {__version__}"


def test_unknown_subcommand_is_a_usage_error_on_one_line() -> None:
    result = run_cli("no-such-command")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("groupcoord: error:")
    assert "Traceback" not in result.stderr


def test_no_subcommand_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: groupcoord" in capsys.readouterr().err


def test_a_reader_closing_the_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    root = tmp_path / "root"
    assert run_cli("topics", "create", "wide", "--partitions", "3000", "--state-root", str(root)).returncode == 0
    # Far more output than a pipe buffer holds: the command is still writing when the reader goes away.
    with subprocess.Popen([sys.executable, "-m", "groupcoord", "topics", "describe", "wide", "--state-root", str(root)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("Topic: wide")
        proc.stdout.close()
        stderr = proc.stderr.read()
        assert proc.wait(timeout=60) == 141
    assert stderr == ""
