"""Record logs: where the coordinator's records become durable (in memory for tests, Delta on disk).

This package's ``__init__`` stays import-light; the Delta implementation lives in its own module.
"""
