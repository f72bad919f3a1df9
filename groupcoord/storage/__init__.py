"""The log layer under both of groupcoord's logs: Delta tables in a state root (local or S3), written and kept small.

The record log (:mod:`groupcoord.log`: the coordinator's write-ahead log, one writer fenced by the lease) and the
topic logs (:mod:`groupcoord.topics`: one table per topic, many writers) are both append-only Delta tables, and
both stand on this package, as Kafka's partitions and its coordinator runtime both stand on its log layer:

- :mod:`~groupcoord.storage.location`: where a table lives, a local directory or an ``s3://`` prefix with its
  storage options (endpoint, region, credentials), and which schemes and settings are refused;
- :mod:`~groupcoord.storage.tables`: opening and creating a table, reading it through pyarrow's native filesystems,
  the table properties groupcoord creates tables with;
- :mod:`~groupcoord.storage.commits`: the Delta pieces of groupcoord's own commits (parts, actions, statistics, the
  commit file's bytes and its commit id);
- :mod:`~groupcoord.storage.files`: the Delta file writer: data files with their statistics, add and remove
  actions, and the conditional (put-if-absent) commit of a version, fsynced or not as the log asks; on object
  storage it hands over to :mod:`~groupcoord.storage.object_files`, the same writer on
  :mod:`~groupcoord.storage.objects` (obstore's put-if-absent);
- :mod:`~groupcoord.storage.group_commit`: many concurrent writes become few commits, one in flight at a time;
- :mod:`~groupcoord.storage.maintenance`: compaction, dropping what a log no longer needs, garbage collection;
- :mod:`~groupcoord.storage.background`: low-priority background threads and the background checkpointer.

What differs between the logs (who may write, what a lost commit means, whether an acknowledgement waits for
fsync, what may be dropped) is the log's own and stated in its package.
"""
