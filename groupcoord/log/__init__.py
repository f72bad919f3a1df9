"""The record log: the coordinator's write-ahead log, where the core's records become durable.

Its semantics, on the log layer it shares with the topic logs (:mod:`groupcoord.storage`):

- **One writer, fenced by the lease.** Only the lease holder appends, each batch as the one commit at the version
  after the previous one; a new holder's first append is an epoch marker, so a deposed holder's next append finds
  its version taken and fails with :class:`~groupcoord.log.base.LogFencedError` (it steps down). Nothing retries at
  another version.
- **fsync before the acknowledgement.** Every commit's files and directory entries are fsynced before the commit
  is linked and the directory after it; the commit batcher (:mod:`groupcoord.log.batcher`) answers a write only
  once its commit returned, so an acknowledged write survives a machine crash.
- **Snapshots and segments.** A snapshot opens a segment; a load reads the newest segment only, and maintenance
  (:mod:`groupcoord.log.maintenance`) keeps two.

In memory for tests (:mod:`groupcoord.log.memory`), Delta on disk (:mod:`groupcoord.log.delta`); the election lease
(:mod:`groupcoord.log.lease`) lives here too. This ``__init__`` stays import-light.
"""
