"""The runtime: the one owner of the path from a decoded request to a durable, acknowledged response.

- :mod:`~groupcoord.runtime.service`: submit a request to the pure core, fire its timers on one clock, release each
  response once the records before it are durable (a failed write becomes an error instead);
- :mod:`~groupcoord.runtime.writer`: persist, batching and ordering (the commit batcher), materialized tables,
  snapshots;
- :mod:`~groupcoord.runtime.guards`: refusing writes while storage is down, and the named crash points
  (:mod:`~groupcoord.runtime.crash_points`);
- :mod:`~groupcoord.runtime.assignments`: server-side assignment batching (``NeedsAssignment`` and consumer groups'
  ``NeedsTargetAssignment`` to runners that are passed in).

The server (the wire) submits to it, and the host (the lease lifecycle) builds one per term. It imports the core,
the log and the state tables below it, and nothing above.
"""

from __future__ import annotations

from groupcoord.runtime.assignments import AssignmentQueue, AssignmentRunner, TargetAssignmentRunner
from groupcoord.runtime.service import CoordinatorService, Persist, RequestFailed, wall_clock_ms
from groupcoord.runtime.writer import DurableWriter, log_persister

__all__ = ["AssignmentQueue", "AssignmentRunner", "CoordinatorService", "DurableWriter", "Persist", "RequestFailed",
           "TargetAssignmentRunner", "log_persister", "wall_clock_ms"]
