"""Tests of ``groupcoord.spark``: the member tasks, the assignment runner and its warm-up, and the plan internals."""
