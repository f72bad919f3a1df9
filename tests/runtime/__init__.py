"""Tests of ``groupcoord.runtime``: the path from a decoded request to a durable, acknowledged response."""
