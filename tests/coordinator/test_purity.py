"""The core imports no Spark, deltalake, kafka-python, sockets or asyncio."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("pyspark", "deltalake", "kafka", "socket", "asyncio")


def test_core_imports_nothing_impure() -> None:
    """Import every core package in a fresh interpreter and inspect ``sys.modules``."""
    code = (
        "import sys\n"
        "import groupcoord.protocol, groupcoord.group, groupcoord.coordinator\n"
        "import groupcoord.coordinator.coordinator, groupcoord.protocol.consumer_protocol\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
