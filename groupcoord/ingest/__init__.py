"""The streaming ingestion job (``jobs/streaming_ingest.py``) and its two engines: Structured Streaming queries as
the group's members (:mod:`~groupcoord.ingest.structured`, the default), or executor tasks as the members
(:mod:`~groupcoord.ingest.job` with the per-member work loop :mod:`~groupcoord.ingest.worker`). Both read with the
``groupcoord`` source's reader and write with the ``groupcoord-delta`` sink's writer, into the same table."""

from __future__ import annotations
