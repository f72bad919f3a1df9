"""``/health``: what an operator pages on, as one JSON document.

::

    {"status": "serving",                     # or "standing_by", "starting", "stopped"
     "healthy": true,                         # serving or standing by (HTTP 200; else 503)
     "holder_id": "host-1a2b3c4d",            # this process
     "lease": {"epoch": 7, "holder": "host-1a2b3c4d", "address": "10.0.0.5:9092",
               "expiry": "2026-11-29T04:01:02.345+00:00", "expires_in_seconds": 8.1},
     "record_log": {"version": 1234, "last_commit_age_seconds": 0.4},           # while serving
     "materializer": {"log_version": 1234, "materialized_version": 1230,        # while serving
                      "pending_batches": 2, "lag_seconds": 0.2}}

``lease`` is this holder's while it serves, and the lease it stands by behind otherwise (``null`` before anyone took
one). A field that cannot be read (storage down) is ``null`` with an ``errors`` entry saying why; the status is still
reported, since it is what the operator needs first.
"""

from __future__ import annotations

from typing import Any

from groupcoord.metrics.host_state import HostState, Phase, seconds_until

HEALTHY = (Phase.SERVING, Phase.STANDING_BY)


def health(host: HostState) -> dict[str, Any]:
    """The health document of ``host`` (see the module docs)."""
    phase, term = host.current()
    document: dict[str, Any] = {"status": phase.value, "healthy": phase in HEALTHY, "holder_id": host.holder_id}
    errors: list[str] = []
    try:
        lease = host.lease_info(term)
        document["lease"] = None if lease is None else {
            "epoch": lease.epoch, "holder": lease.holder, "address": lease.address,
            "expiry": lease.expiry.isoformat(), "expires_in_seconds": round(seconds_until(lease.expiry), 3)}
    except Exception as exc:  # storage trouble while standing by: say so, and still answer
        document["lease"] = None
        errors.append(f"lease: {exc}")
    if term is not None:
        document["record_log"] = {"version": term.batcher.version,
                                  "last_commit_age_seconds": round(host.last_log_commit_age_s(), 3)}
        lag = term.materializer.lag()
        document["materializer"] = {"log_version": lag.log_version, "materialized_version": lag.materialized_version,
                                    "pending_batches": lag.pending_batches, "lag_seconds": round(lag.seconds, 3)}
    if errors:
        document["errors"] = errors
    return document
