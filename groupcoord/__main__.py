"""Entry point for ``python -m groupcoord``."""

from __future__ import annotations

import sys

from groupcoord.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
