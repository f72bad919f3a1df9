"""``writeStream.format("groupcoord-delta")``: the exactly-once Delta sink of a ``groupcoord`` source.

Each micro-batch is one Delta commit of its rows and, per partition, an app transaction with the offset it reached
(:mod:`~groupcoord.sink.commit`, decided by :mod:`~groupcoord.sink.plan`, files by :mod:`~groupcoord.sink.files`);
then the offsets are committed to the group, fenced by ownership (:mod:`~groupcoord.sink.group`,
:mod:`~groupcoord.sink.group_commit`). :mod:`~groupcoord.sink.batches` reads which offsets a batch covers from
Spark's checkpoint; :mod:`~groupcoord.sink.options` checks the options and the table's shape;
:mod:`~groupcoord.sink.data_sink` is the sink Spark calls. ``docs/streaming-sink.md`` is the user's guide.

Import-light: importing this package loads neither pyspark nor deltalake; the submodules do.
"""
