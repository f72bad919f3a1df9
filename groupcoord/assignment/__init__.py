"""Server-side assignment: what the coordinator runs for a ``server-<assignor>`` group.

The host takes an assignment runner and hands it the groups whose join phase completed
(:mod:`groupcoord.runtime.assignments` batches them). :func:`~groupcoord.assignment.runner.spark_assignment_runner`
builds the one groupcoord ships (:mod:`~groupcoord.assignment.runner`): it builds each batch's inputs once, lets the
assignors pick the engine (:func:`groupcoord.assignors.engine.choose_engine`: Python on the driver, or a Spark call)
and encodes the answers. Beside it: the planner warm-up of a fresh driver (:mod:`~groupcoord.assignment.warmup`) and
the partition weights the checkpoint job measures (:mod:`~groupcoord.assignment.weights`).

Import-light: importing this package loads neither pyspark nor deltalake; the modules do.
"""
