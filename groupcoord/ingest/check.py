"""The exactly-once check of a sink against its source: every source record once, nothing else."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa

from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import table_dataset
from groupcoord.topics.log_table import create_topic_log


@dataclass(frozen=True)
class SinkCheck:
    """How a sink compares with the records it should hold (identified by topic, partition and offset)."""

    expected: int
    found: int
    missing: int
    duplicated: int
    unexpected: int
    mismatched_values: int

    @property
    def ok(self) -> bool:
        """Every expected record exactly once, with its value, and nothing else."""
        return self.found == self.expected and not (self.missing or self.duplicated or self.unexpected
                                                    or self.mismatched_values)

    def summary(self) -> str:
        """One line for people."""
        verdict = "OK: every record exactly once" if self.ok else "FAILED"
        return (f"{verdict} (expected {self.expected}, sink rows {self.found}, missing {self.missing}, "
                f"duplicated {self.duplicated}, unexpected {self.unexpected}, wrong values {self.mismatched_values})")


def check_exactly_once(sink_rows: pa.Table, source_rows: pa.Table) -> SinkCheck:
    """Compare rows with columns ``topic, partition, offset, value`` of the sink and of the source."""
    def keyed(table: pa.Table) -> list[tuple[str, int, int]]:
        return list(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                        table.column("offset").to_pylist(), strict=True))

    source = dict(zip(keyed(source_rows), source_rows.column("value").to_pylist(), strict=True))
    sink_keys = keyed(sink_rows)
    counts = Counter(sink_keys)
    sink_values = dict(zip(sink_keys, sink_rows.column("value").to_pylist(), strict=True))
    return SinkCheck(
        expected=len(source),
        found=len(sink_keys),
        missing=sum(1 for key in source if key not in counts),
        duplicated=sum(n - 1 for n in counts.values() if n > 1),
        unexpected=sum(1 for key in counts if key not in source),
        mismatched_values=sum(1 for key, value in sink_values.items() if key in source and source[key] != value),
    )


def embedded_rows(root: StateRoot, topics: list[str]) -> pa.Table:
    """Every record of the embedded logs of ``topics`` with a ``topic`` column (``topic, partition, offset, value``)."""
    tables = []
    for topic in topics:
        rows = table_dataset(create_topic_log(root, topic)).to_table(columns=["partition", "offset", "value"])
        tables.append(rows.append_column("topic", pa.array([topic] * rows.num_rows, pa.string())))
    schema = pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("value", pa.binary()),
                        ("topic", pa.string())])
    return pa.concat_tables([t.cast(schema) for t in tables]) if tables else schema.empty_table()
