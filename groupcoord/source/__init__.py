"""``spark.readStream.format("groupcoord")``: a Structured Streaming source whose query is a consumer-group member.

:mod:`~groupcoord.source.data_source` is the source Spark calls; :mod:`~groupcoord.source.query_plan` its driver side
and :mod:`~groupcoord.source.query_member` the query's one group member (both in the source's driver-side Python
worker); :mod:`~groupcoord.source.offset` the offset Spark checkpoints; :mod:`~groupcoord.source.planning` the split
of a micro-batch into input partitions; :mod:`~groupcoord.source.records` the reader of one offset range (embedded log
or Kafka) as Arrow batches; :mod:`~groupcoord.source.fences` what a query's member owns, for its other workers;
:mod:`~groupcoord.source.options` the options, Spark's Kafka source's plus a group. ``groupcoord.spark.register(spark)``
registers it; ``docs/streaming.md`` is the user's guide.

Import-light: importing this package loads neither pyspark nor deltalake; the submodules do. So is
:mod:`~groupcoord.source.data_source`, which every Python worker of a query imports (Spark's planner workers and the
executors' too): it loads neither the member, nor delta-rs, nor kafka-python; :mod:`~groupcoord.source.query_plan`,
which does, is imported at the first driver-side call (``tests/source/test_import_light.py`` holds the line).
"""
