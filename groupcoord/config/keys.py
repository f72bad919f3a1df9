"""Every ``spark.groupcoord.*`` key, with its type, default and documentation.

Each layer has its own section. ``conf/groupcoord-defaults.conf`` is generated from this file
(``python -m groupcoord.config.generate``) and a test checks that the two agree.
"""

from __future__ import annotations

from groupcoord.config.registry import REGISTRY


def _host_port(value: str) -> str | None:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        return "expected HOST:PORT"
    return None


INT32_MAX = 2**31 - 1

# --- Coordinator -----------------------------------------------------------------------------------------------------
REGISTRY.define("state.root", str, None,
                "Directory or s3:// (s3a://) URI holding the coordinator's Delta tables (the state root).")
REGISTRY.define("listen", str, "127.0.0.1:9092", "HOST:PORT the coordinator endpoint binds; port 0 picks one.",
                check=_host_port)
REGISTRY.define("advertised.listener", str, None,
                "HOST:PORT advertised to clients in Metadata and FindCoordinator; defaults to the bound address.",
                check=_host_port)
REGISTRY.define("metrics.listen", str, None,
                "HOST:PORT of the live metrics endpoint (/metrics in Prometheus's text format, /health as JSON), "
                "served by every coordinator host, standing by or serving; unset: none. It names groups and "
                "topics: keep it on loopback unless the network is trusted (docs/metrics.md).",
                check=_host_port)
REGISTRY.define("node.id", int, None,
                "Broker id given with the advertised address in Metadata and FindCoordinator; by default a number "
                "derived from that address, so a standby taking over at another address is another broker to "
                "clients.", minimum=0, maximum=INT32_MAX)
REGISTRY.define("group.min.session.timeout.ms", int, 6000, "Smallest session timeout a member may ask for.",
                minimum=0, maximum=INT32_MAX)
REGISTRY.define("group.max.session.timeout.ms", int, 1800000, "Largest session timeout a member may ask for.",
                minimum=0, maximum=INT32_MAX)
REGISTRY.define("group.initial.rebalance.delay.ms", int, 3000,
                "How long the first rebalance of an empty group waits for more members to join.",
                minimum=0, maximum=INT32_MAX)
REGISTRY.define("group.max.size", int, INT32_MAX, "Most members a group may have.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("group.consumer.session.timeout.ms", int, 45000,
                "Session timeout of consumer-protocol members (KIP-848; group.protocol=consumer): a member whose "
                "heartbeats stop this long is removed.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("group.consumer.heartbeat.interval.ms", int, 5000,
                "How often consumer-protocol members (KIP-848) heartbeat; their new assignments reach them then.",
                minimum=1, maximum=INT32_MAX)
REGISTRY.define("group.consumer.max.size", int, INT32_MAX, "Most members a consumer group (KIP-848) may have.",
                minimum=1, maximum=INT32_MAX)
REGISTRY.define("group.consumer.assignors", str, "uniform,range",
                "Comma-separated server assignors consumer groups (KIP-848) may ask for (group.remote.assignor); "
                "the first is the default. Any of range, roundrobin, sticky, cooperative-sticky, uniform, weighted.")
REGISTRY.define("group.consumer.assignment.interval.ms", int, 0,
                "Least time between two target assignments of one consumer group (KIP-848), as Kafka's setting of "
                "that name: a change within it is assigned when it has passed, and members keep their current "
                "assignment meanwhile. 0 (Kafka's default is 1000) assigns at once: groupcoord computes targets off "
                "the request path, many groups in one batch.", minimum=0, maximum=INT32_MAX)
REGISTRY.define("group.consumer.migration.policy", str, "bidirectional",
                "Which online conversions between classic and consumer groups (KIP-848) are allowed, as Kafka's "
                "group.consumer.migration.policy: upgrade (a classic group whose members roll to "
                "group.protocol=consumer becomes a consumer group), downgrade (a consumer group whose last "
                "consumer-protocol member leaves while classic members remain becomes a classic group), "
                "bidirectional (both) or disabled. Empty groups convert either way whatever the policy.",
                choices=("disabled", "upgrade", "downgrade", "bidirectional"))
REGISTRY.define("offsets.retention.minutes", int, 10080,
                "How long committed offsets of an empty group (or of an unsubscribed topic) are kept.", minimum=1)
REGISTRY.define("offsets.retention.check.interval.ms", int, 600000,
                "How often the coordinator looks for expired offsets (KIP-211).", minimum=1, maximum=INT32_MAX)
REGISTRY.define("offset.metadata.max.bytes", int, 4096, "Largest metadata string accepted with an offset commit.",
                minimum=0, maximum=INT32_MAX)
REGISTRY.define("socket.request.max.bytes", int, 104857600, "Largest request frame the endpoint accepts.",
                minimum=1024, maximum=INT32_MAX)

# --- Security (docs/security.md) ------------------------------------------------------------------------------------
SECURITY_SECRETS = {"sasl.password": "GROUPCOORD_SASL_PASSWORD", "ssl.key.password": "GROUPCOORD_SSL_KEY_PASSWORD"}
"""Secret security settings, refused as keys (Spark shows every conf value in its UI and event log): they come from
the environment variable named here or from the file a ``*.file`` key names."""


def _mechanisms(value: str) -> str | None:
    names = [name.strip().upper() for name in value.split(",") if name.strip()]
    unknown = sorted(set(names) - {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})
    if not names:
        return "expected at least one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
    if unknown:
        return f"unsupported SASL mechanism {unknown[0]}: expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
    return None


REGISTRY.define("listener.security.protocol", str, "PLAINTEXT",
                "Security protocol of the coordinator's listener, as Kafka's: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT "
                "or SASL_SSL (SASL over TLS). groupcoord's own clients connect with the same protocol.",
                choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"))
REGISTRY.define("sasl.enabled.mechanisms", str, "SCRAM-SHA-256,SCRAM-SHA-512",
                "Comma-separated SASL mechanisms a SASL listener accepts: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. "
                "Users and their credentials live in the state root (`groupcoord users`).", check=_mechanisms)
REGISTRY.define("connection.failed.authentication.delay.ms", int, 100,
                "How long a failed authentication's answer is delayed before the connection closes, as Kafka's "
                "setting of that name (slows down password guessing).", minimum=0, maximum=INT32_MAX)
REGISTRY.define("sasl.mechanism", str, "SCRAM-SHA-512",
                "SASL mechanism groupcoord's own clients (members, the streaming source, the CLI) authenticate "
                "with on a SASL listener.", choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))
REGISTRY.define("sasl.username", str, None,
                "User groupcoord's own clients authenticate as on a SASL listener.")
REGISTRY.define("sasl.password.file", str, None,
                "File holding the password of sasl.username; defaults to GROUPCOORD_SASL_PASSWORD (secrets are "
                "never accepted as a key's value).")
REGISTRY.define("ssl.keystore.location", str, None,
                "PEM file with the listener's certificate chain (and its key, unless ssl.key.location names it); "
                "for groupcoord's clients, their certificate for mutual TLS.")
REGISTRY.define("ssl.key.location", str, None, "PEM file with the private key of ssl.keystore.location's certificate.")
REGISTRY.define("ssl.key.password.file", str, None,
                "File holding the password of an encrypted private key; defaults to GROUPCOORD_SSL_KEY_PASSWORD.")
REGISTRY.define("ssl.truststore.location", str, None,
                "PEM file of CA certificates: the listener trusts them for client certificates (mutual TLS), "
                "groupcoord's clients for the coordinator's certificate (else the system's CAs).")
REGISTRY.define("ssl.client.auth", str, "none",
                "Client certificates on an SSL or SASL_SSL listener, as Kafka's: none, requested or required "
                "(mutual TLS; on SSL the principal comes from the certificate).",
                choices=("none", "requested", "required"))
REGISTRY.define("ssl.principal.mapping.rules", str, "DEFAULT",
                "Kafka's rules mapping a client certificate's distinguished name to a principal name: "
                "comma-separated DEFAULT or RULE:pattern/replacement/[LU].")
REGISTRY.define("ssl.endpoint.identification.algorithm", str, "https",
                "Host name verification of groupcoord's clients: https (the coordinator's certificate must match "
                "the address it advertises, as Kafka's clients check) or empty to turn it off.",
                choices=("https", ""))
REGISTRY.define("authorizer.enabled", bool, False,
                "Check every request against the ACLs in the state root (`groupcoord acls`, Kafka's CreateAcls), "
                "as a Kafka broker with StandardAuthorizer does; off, every client may do everything.")
REGISTRY.define("super.users", str, "",
                "Semicolon-separated principals (User:NAME) the authorizer allows everything, as Kafka's "
                "super.users.")
REGISTRY.define("allow.everyone.if.no.acl.found", bool, False,
                "Whether a resource no ACL names is open to everyone (Kafka's setting of that name; by default "
                "such a resource is closed to all but super users).")

# --- Object storage (a state root on s3://; README "State root on S3") -----------------------------------------------
STORAGE_SECRETS = ("storage.secret.access.key", "storage.session.token")
"""Secret storage settings: refused as keys (a --conf value shows in Spark's UI and event log); they come from the
environment (AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or from the file a ``*.file`` key names."""
REGISTRY.define("storage.endpoint", str, None,
                "S3 endpoint URL, for S3-compatible servers (http://host:port); defaults to AWS_ENDPOINT_URL_S3 or "
                "AWS_ENDPOINT_URL, else AWS's own.")
REGISTRY.define("storage.region", str, None, "S3 region; defaults to AWS_REGION or AWS_DEFAULT_REGION, else us-east-1.")
REGISTRY.define("storage.access.key.id", str, None, "S3 access key id; defaults to AWS_ACCESS_KEY_ID.")
REGISTRY.define("storage.secret.access.key.file", str, None,
                "File holding the S3 secret access key; defaults to AWS_SECRET_ACCESS_KEY (secrets are never "
                "accepted as a key's value).")
REGISTRY.define("storage.session.token.file", str, None,
                "File holding an S3 session token; defaults to AWS_SESSION_TOKEN.")

# --- Topic catalog and topic log --------------------------------------------------------------------------------------
REGISTRY.define("metadata.refresh.ms", int, 1000,
                "How often the running coordinator re-reads the topic catalog to see new topics and partitions.",
                minimum=1, maximum=INT32_MAX)
REGISTRY.define("topics.commit.backoff.ms", int, 5,
                "First backoff after a topic catalog or topic log commit lost to a concurrent writer; it doubles "
                "(with jitter) up to 50 times this value.", minimum=1, maximum=60000)
REGISTRY.define("topics.commit.timeout.ms", int, 60000,
                "How long a topic catalog or topic log writer keeps re-reading and retrying a lost conditional "
                "commit before it gives up with REQUEST_TIMED_OUT.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("topics.produce.batch.records", int, 50000,
                "Most records `groupcoord topics produce` writes in one conditional commit, and most records "
                "one group commit of Produce requests to a topic holds.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("topics.produce.linger.ms", int, 5,
                "How long the Produce group commit of a topic waits after the first waiting batch for more batches "
                "to join its Delta commit (batches arriving while a commit is in flight join the next one anyway).",
                minimum=0, maximum=60000)

# --- Record log, lease and commit batcher -----------------------------------------------------------------------------
REGISTRY.define("log.linger.ms", int, 0,
                "How long the commit batcher waits after the first write of a batch for more writes to join it. "
                "0: a write that finds no commit in flight starts one at once (writes arriving while a commit is in "
                "flight still share the next one), so a lone synchronous commit waits only for its own Delta commit.",
                minimum=0, maximum=60000)
REGISTRY.define("log.min.commit.interval.ms", int, 0,
                "Least time between the starts of two record-log commits; caps the Delta commit rate at 1000 / this "
                "value per second. 0: no cap beyond one commit in flight at a time (a client committing "
                "synchronously in a loop then makes one Delta commit per request: see docs/benchmarks.md, "
                "commit_sync, for the commits per second that costs).",
                minimum=0, maximum=60000)
REGISTRY.define("log.fsync", bool, True,
                "fsync each record-log commit's files before offset commits and group changes are acknowledged. "
                "false acknowledges from the page cache, as Kafka does by default (log.flush.interval.messages "
                "unset): faster, but a machine crash (not a process crash) may lose the last acknowledged commits.")
REGISTRY.define("log.checkpoint.interval", int, 10,
                "Delta checkpoint interval of the record log (delta.checkpointInterval), in commits.",
                minimum=1, maximum=INT32_MAX)
REGISTRY.define("log.snapshot.interval", int, 100000,
                "Records appended after the latest snapshot that make the coordinator write a new snapshot, so a "
                "load replays at most about this many records after the snapshot.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("history.retention.hours", int, 168,
                "How long history is kept in the materialized state tables, topic logs and lease table: Delta log "
                "entries (delta.logRetentionDuration) and unreferenced data files (vacuum), so time travel (as_of) "
                "reaches this far back.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("log.retention.minutes", int, 10,
                "How long the record log keeps its own Delta history: log entries and the data files of superseded "
                "segments and compacted commits. Bounded on purpose: at 20 commits/s the log creates 72,000 files "
                "an hour, and every checkpoint lists each file removed within this window.", minimum=1,
                maximum=INT32_MAX)
REGISTRY.define("log.maintenance.interval.ms", int, 60000,
                "How often the lease holder runs record-log and lease-table maintenance (compaction, retention, "
                "vacuum, checkpoint, metadata clean-up).", minimum=1000, maximum=INT32_MAX)
REGISTRY.define("lease.renew.interval.ms", int, 2000, "How often the lease holder renews the coordinator lease.",
                minimum=1, maximum=INT32_MAX)
REGISTRY.define("lease.timeout.ms", int, 10000, "How long a lease lasts after it was taken or last renewed.",
                minimum=1, maximum=INT32_MAX)
REGISTRY.define("lease.safety.ms", int, 2000,
                "Safety margin: a holder stops serving this long before its lease expires unless it renewed, and "
                "a taker waits this long after expiry before taking the lease.", minimum=0, maximum=INT32_MAX)

# --- Materialized state tables ----------------------------------------------------------------------------------------
REGISTRY.define("state.materialize.interval.ms", int, 250,
                "How often the lease holder appends the rows of newly committed log batches to the materialized "
                "state tables (one Delta commit per table per flush), which caps their commit rate.",
                minimum=10, maximum=60000)
REGISTRY.define("state.materialize.lag.target.ms", int, 1000,
                "Lag of the materialized state tables behind the record log above which the holder logs a warning.",
                minimum=1, maximum=INT32_MAX)

# --- Member client ----------------------------------------------------------------------------------------------------
REGISTRY.define("member.retry.backoff.ms", int, 100,
                "First backoff of a member before it rediscovers the coordinator or retries a failed request; it "
                "doubles (with jitter) up to member.retry.backoff.max.ms.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("member.retry.backoff.max.ms", int, 2000,
                "Largest backoff of a member between coordinator rediscovery attempts.", minimum=1,
                maximum=INT32_MAX)
REGISTRY.define("member.request.timeout.ms", int, 30000,
                "How long a member waits for a response (JoinGroup waits up to the rebalance timeout plus 5 s).",
                minimum=1, maximum=INT32_MAX)
REGISTRY.define("member.metadata.max.age.ms", int, 5000,
                "How often a member with a topic pattern re-reads the matching topics; a change makes it rejoin.",
                minimum=1, maximum=INT32_MAX)
REGISTRY.define("member.auto.commit.interval.ms", int, 5000,
                "How often a member with auto commit on commits the offsets marked as processed.", minimum=1,
                maximum=INT32_MAX)
REGISTRY.define("member.client.id", str, "groupcoord-member",
                "Client id members send in request headers (the coordinator prefixes member ids with it).")

# --- Streaming ingestion job (jobs/streaming_ingest.py) ---------------------------------------------------------------
REGISTRY.define("group.id", str, None, "Consumer group the ingestion job's members join (--group).")
REGISTRY.define("topics", str, None, "Comma-separated topics the ingestion job consumes (--topics); or use pattern.")
REGISTRY.define("pattern", str, None, "Regular expression of topics the ingestion job consumes (--pattern).")
REGISTRY.define("source", str, "embedded",
                "Where records come from: 'embedded' (the state root's topic log) or kafka://HOST:PORT[,HOST:PORT].")
REGISTRY.define("source.kafka.config.file", str, None,
                "A properties file of Kafka client settings for a kafka:// source, in the Java client's names as "
                "Spark's Kafka source takes them without 'kafka.' (security.protocol, sasl.mechanism, "
                "sasl.jaas.config, ssl.truststore.location with ssl.truststore.type=PEM...), as Kafka's tools take "
                "--command-config: the secrets stay in the file, out of the command line and Spark's UI.")
REGISTRY.define("sink", str, None, "Path of the Delta table the ingestion job appends records to (--sink).")
REGISTRY.define("members", int, 2,
                "How many members join the group (--members): Structured Streaming queries in the structured "
                "engine, executor tasks in the members engine.", minimum=1, maximum=10000)
REGISTRY.define("available.now", bool, False,
                "Consume up to the log-end offsets seen at start, commit, leave the group and exit (--available-now).")
REGISTRY.define("auto.offset.reset", str, "earliest",
                "Where a partition with no committed offset and no sink transaction starts.",
                choices=("earliest", "latest"))
REGISTRY.define("max.records.per.batch", int, 10000,
                "Most records per sink commit: each query's maxOffsetsPerTrigger (structured engine), or what an "
                "executor member reads from one partition (members engine).", minimum=1, maximum=INT32_MAX)
REGISTRY.define("engine", str, "structured",
                "How the ingestion job reads (--engine): 'structured' (Structured Streaming queries, "
                "readStream.format('groupcoord') into groupcoord-delta, one query per member) or 'members' (executor "
                "tasks as group members, run_members).", choices=("structured", "members"))
REGISTRY.define("streaming.checkpoint", str, None,
                "Structured engine: the directory of the queries' checkpoints (query-<i> each); default "
                "<sink>/_checkpoints.")
REGISTRY.define("streaming.trigger.ms", int, 1000,
                "Structured engine without --available-now: the micro-batch interval of each query.", minimum=1,
                maximum=INT32_MAX)
REGISTRY.define("streaming.session.timeout.ms", int, 45000,
                "Structured engine: each query's member session timeout (the source's session.timeout.ms). When "
                "the driver dies, its queries' members keep their partitions this long after the next coordinator "
                "loaded, so the restarted driver's queries wait for it; 10000 on a cluster whose driver runs under "
                "a supervisor (README, 'Running on a cluster').", minimum=1, maximum=INT32_MAX)
REGISTRY.define("source.metadata.refresh.ms", int, 30000,
                "Members engine: how often the driver copies a Kafka source's partition counts into the topic "
                "catalog (they only grow); each query of the structured engine copies them at every trigger.",
                minimum=1, maximum=INT32_MAX)

# --- Admin CLI and offset checkpoint job (groupcoord groups, jobs/offset_checkpoint.py) -------------------------------
REGISTRY.define("admin.lease.wait.ms", int, 30000,
                "How long an admin write (groups reset-offsets --execute, delete, delete-offsets) waits to become the "
                "lease holder itself when no coordinator holds the lease.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("admin.request.timeout.ms", int, 30000,
                "How long an admin write waits for the coordinator's answer.", minimum=1, maximum=INT32_MAX)
REGISTRY.define("checkpoint.window", int, 10,
                "How many of the latest checkpoint runs the lag status rules (Burrow's) look at.", minimum=2,
                maximum=10000)
REGISTRY.define("checkpoint.table", str, None,
                "Path of the offset_checkpoints Delta table; defaults to <state root>/offset_checkpoints.")
REGISTRY.define("checkpoint.prometheus.file", str, None,
                "Where the checkpoint job writes its Prometheus textfile (kafka_exporter metric names); unset: none.")

# --- Spark executors as members (groupcoord.spark.members.run_members) ------------------------------------------------
REGISTRY.define("instance.prefix", str, None,
                "Prefix of the static group.instance.id of each member task (<prefix>-<task index>), so a retried "
                "task rejoins as the same member; defaults to spark.app.name.")
REGISTRY.define("assignor.reserved.slots", int, 1,
                "Task slots run_members keeps free beside its member tasks for the coordinator's assignment jobs; "
                "it needs members + this many slots.", minimum=0, maximum=10000)
REGISTRY.define("assignor.warmup", bool, True,
                "Warm Spark's planner for server-side assignment when the coordinator starts (serve, run_members, "
                "the registered source), on a background thread that gives way to real assignments: a fresh "
                "driver's first rebalance then does not pay for a cold planner. In a job's driver only the plans "
                "its assignors would run on Spark are warmed (none for assignments that run on the driver).")
REGISTRY.define("assignors", str, "server-cooperative-sticky",
                "Comma-separated assignors the ingestion job's members offer, preferred first: server-* names are "
                "assigned by the coordinator (in Python on the driver, or with Spark for large groups), others "
                "(cooperative-sticky, range...) by the group leader.")
