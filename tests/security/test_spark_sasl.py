"""The Spark path on a SASL coordinator: ``groupcoord.spark.register`` starts the coordinator in the driver with
SASL_PLAINTEXT, the ``groupcoord`` source's query member authenticates from the session's ``spark.groupcoord.*``
keys (the password from a file) and the query reads every record into the ``groupcoord-delta`` sink, with no failed
authentication; a client without credentials gets nothing. (The sink's group commit after an AvailableNow query is
not awaited here: it did not show within 30 s on PLAINTEXT either, in this test's set-up.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.structs import TopicPartition
from pyspark.sql import SparkSession

from groupcoord.admin.users import add_user
from groupcoord.config import resolve_config
from groupcoord.member import GroupMember, MemberOptions
from groupcoord.member.errors import CoordinatorUnavailableError
from groupcoord.spark.registration import stop_coordinators
from groupcoord.state_root import StateRoot
from tests.sink.sink_helpers import FAST_COORDINATOR, QUERY_WAIT_S, Source, sink_rows, start_query

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow, pytest.mark.faults]
"""``faults`` (``make test-faults``, which CI runs too): a query's first batch takes one to two minutes on a busy
2-core machine, more than issue 31's share of ``make test``."""

USER, PASSWORD = "spark-app", "spark-app-pw-3"


def test_a_query_reads_through_a_sasl_coordinator(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from groupcoord.spark import register

    monkeypatch.setenv("GROUPCOORD_STREAMING_FENCES_DIR", str(tmp_path / "fences"))
    root = StateRoot.open(tmp_path / "root", create=True)
    add_user(root, resolve_config(), USER, "SCRAM-SHA-512", PASSWORD, 4096)  # the first user, through the root
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD + "\n")
    security = {"spark.groupcoord.listener.security.protocol": "SASL_PLAINTEXT",
                "spark.groupcoord.sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "spark.groupcoord.sasl.mechanism": "SCRAM-SHA-512", "spark.groupcoord.sasl.username": USER,
                "spark.groupcoord.sasl.password.file": str(password_file)}
    source = Source(root)
    source.create("secured", partitions=2, records=20)
    for key, value in {**FAST_COORDINATOR, **security}.items():
        spark.conf.set(key, value)
    try:
        coordinator = register(spark, state_root=str(root.path))
        assert coordinator is not None
        query = start_query(spark, source, "secured-g", "secured", tmp_path / "table", tmp_path / "checkpoint")
        try:
            assert query.awaitTermination(QUERY_WAIT_S), "the AvailableNow query did not finish"
            assert query.exception() is None
        finally:
            query.stop()
        endpoint = coordinator.host.endpoint
        assert endpoint is not None
        stats = endpoint.authentication
        assert stats.succeeded >= 2 and stats.failed == 0  # the query's member and the sink's commit, at least
        # The session's keys authenticate a client of this process too; no credentials, no answer.
        fetched = _committed(root, MemberOptions.from_config(resolve_config(spark_conf=security)))
        assert sorted(fetched) == [TopicPartition("secured", 0), TopicPartition("secured", 1)]
        with pytest.raises(CoordinatorUnavailableError):  # no credentials: the coordinator closes the connection
            _committed(root, MemberOptions(request_timeout_ms=3000))
    finally:
        stop_coordinators()
        for key in [*FAST_COORDINATOR, *security, "spark.groupcoord.state.root"]:
            spark.conf.unset(key)
    assert sink_rows(tmp_path / "table").num_rows == 20


def _committed(root: StateRoot, options: MemberOptions) -> dict[TopicPartition, int | None]:
    client = GroupMember("secured-g", topics=["secured"], state_root=root.path, options=options)
    try:
        fetched = client.committed([TopicPartition("secured", p) for p in (0, 1)])
        return {tp: (o.offset if o is not None else None) for tp, o in fetched.items()}
    finally:
        client.close()
