"""groupcoord: Kafka's consumer-group protocol for Spark, with its state in Delta tables.

The package is layered from a pure core outwards (see ``README.md``):
``protocol`` -> ``group`` -> ``coordinator`` -> ``log`` -> ``server`` / ``spark`` / ``cli``.
"""

from __future__ import annotations

import logging

__version__ = "0.1.0"

# The library logs through the ``groupcoord`` logger and never configures the root logger.
logging.getLogger("groupcoord").addHandler(logging.NullHandler())

__all__ = ["__version__"]
