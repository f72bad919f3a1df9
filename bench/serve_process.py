"""A ``groupcoord serve`` subprocess for the benchmarks: start, wait for readiness, read its CPU time, stop or kill."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

READY_PREFIX = "groupcoord coordinator listening on "
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ServeProcess:
    """``python -m groupcoord serve --state-root ROOT --listen 127.0.0.1:0 [--no-spark] ARGS``; stderr goes to a file.

    ``spark=True`` lets the coordinator start Spark for server-side (``server-*``) assignment.
    """

    def __init__(self, root: Path | str, *args: str, log_path: Path, env: dict[str, str] | None = None,
                 spark: bool = False) -> None:
        command = [sys.executable, "-m", "groupcoord", "serve", "--state-root", str(root), "--listen",
                   "127.0.0.1:0", *([] if spark else ["--no-spark"]), *args]
        self.log_path = log_path
        self._stderr = log_path.open("w")
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     env={**os.environ, **(env or {})})
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))

    def wait_ready(self, timeout: float) -> tuple[str, int] | None:
        """``(host, port)`` from the readiness line, or ``None`` if it does not come within ``timeout`` seconds."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if not line.startswith(READY_PREFIX):
            raise RuntimeError(f"unexpected serve output: {line!r}")
        host, _, port = line[len(READY_PREFIX):].rpartition(":")
        return host, int(port)

    def cpu_seconds(self) -> float:
        """User plus system CPU time the process used so far (from /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS

    def kill(self) -> None:
        """SIGKILL and reap."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        """SIGTERM (SIGKILL after 15 s) if still running; close the log."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._stderr.close()

    def wait_logged(self, text: str, timeout: float) -> bool:
        """True once the process's log holds a line containing ``text`` (checked every 0.2 s for ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_path.read_text():
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.2)
        return False

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the process logged."""
        self._stderr.flush()
        return "\n".join(self.log_path.read_text().splitlines()[-lines:])
