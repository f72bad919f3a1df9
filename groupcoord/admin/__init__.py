"""Administration of groups: what ``groupcoord groups`` and ``jobs/offset_checkpoint.py`` are built from.

- :mod:`~groupcoord.admin.describe`: groups, members and offsets read from the Delta state (no coordinator needed);
- :mod:`~groupcoord.admin.reset`: the offset reset planner (every ``reset-offsets`` mode, clamped to the log);
- :mod:`~groupcoord.admin.wire` and :mod:`~groupcoord.admin.holder`: writes over the Kafka wire to the lease holder,
  taking the lease for the write when nobody holds it;
- :mod:`~groupcoord.admin.checkpoint`, :mod:`~groupcoord.admin.lag`, :mod:`~groupcoord.admin.burrow`,
  :mod:`~groupcoord.admin.prometheus`, :mod:`~groupcoord.admin.plot`: the offset checkpoint job.
"""

from __future__ import annotations
