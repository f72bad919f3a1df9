"""groupcoord: Kafka's consumer-group protocol for Spark, with its state in Delta tables.

The package is layered from a pure core outwards, 15 rows from ``protocol`` to ``cli``: a package imports only from
its own row and the rows below it. ``README.md`` and ``docs/architecture.md`` show the table, and
``tests/architecture`` holds both the rule and the table.
"""

from __future__ import annotations

import logging

__version__ = "0.1.0"

# The library logs through the ``groupcoord`` logger and never configures the root logger.
logging.getLogger("groupcoord").addHandler(logging.NullHandler())

__all__ = ["__version__"]
