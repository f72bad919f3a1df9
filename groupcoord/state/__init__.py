"""Queryable state: the materialized Delta tables (offsets, groups, members, assignments) and their views.

- :mod:`groupcoord.state.schema`: table names, Arrow schemas and keys;
- :mod:`groupcoord.state.rows`: records to rows (pure);
- :mod:`groupcoord.state.materializer`: :class:`~groupcoord.state.materializer.Materializer`, the holder's writer;
- :mod:`groupcoord.state.views`: the current state of a table (latest row per key), at any kept point of history;
- :mod:`groupcoord.state.history`: Delta time travel and :class:`~groupcoord.state.history.StateHistoryError`.

Spark users read them through :mod:`groupcoord.spark.state`. This ``__init__`` stays import-light.
"""
