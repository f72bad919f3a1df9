"""Tests of ``groupcoord.assignment``: the server-side assignment runner, its planner warm-up, partition weights."""
