"""Validation and normalisation of the three input DataFrames.

Every assignor sees the same normalised frames: a group column ``_g`` (the caller's ``group_id``, or one constant
group), optional columns filled with nulls, integral columns cast to ``int`` and weights to ``double``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from groupcoord.assignors.errors import AssignorInputError
from groupcoord.plans import known_empty
from groupcoord.plans.partitioning import estimated_bytes, partition_count, single_task
from groupcoord.plans.sql import query, quoted

GROUP = "_g"
"""The internal group column; the caller's ``group_id`` is renamed to it."""

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType)


ColumnKind = Literal["string", "int", "double", "strings"]
"""What an input column holds: ``int`` is any integral type, ``strings`` an array of strings."""


@dataclass(frozen=True)
class _Column:
    name: str
    kind: ColumnKind
    required: bool


_MEMBERS = (
    _Column("member_id", "string", True),
    _Column("group_instance_id", "string", False),
    _Column("topics", "strings", True),
    _Column("rack", "string", False),
)
_PARTITIONS = (
    _Column("topic", "string", True),
    _Column("partition", "int", True),
    _Column("racks", "strings", False),
    _Column("weight", "double", False),
)
_OWNED = (
    _Column("member_id", "string", True),
    _Column("topic", "string", True),
    _Column("partition", "int", True),
    _Column("generation", "int", False),
)
_COLUMNS: dict[str, tuple[_Column, ...]] = {"members": _MEMBERS, "partitions": _PARTITIONS, "owned": _OWNED}

_NULL_TYPES: dict[str, T.DataType] = {
    "string": T.StringType(),
    "int": T.IntegerType(),
    "double": T.DoubleType(),
    "strings": T.ArrayType(T.StringType()),
}


@dataclass(frozen=True)
class Inputs:
    """The normalised inputs of one ``assign`` call.

    ``batched`` says whether the caller gave ``group_id``. Every frame is hash-partitioned by ``_g`` into
    ``partition_count`` partitions once planned with ``spark.sql.shuffle.partitions`` set to that number (see
    :mod:`groupcoord.plans.partitioning`). ``owned`` is None when the caller gave none (:func:`none_owned` builds
    the empty frame for the plans that still read it).
    ``has_owned`` and ``has_racks`` are False only when the plan proves that nothing is owned, or that no member has
    a rack or no partition a replica rack (:mod:`groupcoord.plans.facts`); assignors then skip the branch.
    """

    members: tuple[str, DataFrame]
    """The members as a SQL text over ``{frame}`` and the frame it reads (the one-member-per-row checks): the first
    consumer (``prepare``) nests the text in its own, one SQL call and one temporary view fewer per assignment."""
    partitions: tuple[str, DataFrame]
    """The partitions the same way."""
    owned: DataFrame | None
    batched: bool
    partition_count: int
    single_task: bool = False
    has_owned: bool = True
    has_racks: bool = True
    unchecked: Mapping[str, tuple[str, DataFrame]] = field(default_factory=dict)
    """Per input given (``members``, ``partitions``, ``owned``): its canonical columns as a SQL text over
    ``{frame}`` and that frame, values unchecked (for a reader that checks them itself: the Python algorithms)."""


def _accepts(kind: ColumnKind, data_type: T.DataType) -> bool:
    if kind == "string":
        return isinstance(data_type, T.StringType)
    if kind == "int":
        return isinstance(data_type, _INTEGRAL)
    if kind == "double":
        return isinstance(data_type, _NUMERIC)
    return isinstance(data_type, T.ArrayType) and isinstance(data_type.elementType, T.StringType)


_SQL_TYPES: dict[str, str] = {"string": "string", "int": "int", "double": "double", "strings": "array<string>"}

_ONE_GROUP = "coalesce(substring(CAST({column} AS string), 1, 0), '')"
"""The constant group ``""`` of an unbatched call, written so that the optimiser cannot fold it.

A literal would be folded away, and with it the hash partitioning by group that spares every later shuffle.
"""


def _fail(message: str) -> str:
    """SQL raising ``message`` (a SQL string expression) as an :class:`AssignorInputError` inside the plan."""
    return f"raise_error(concat('AssignorInputError: ', {message}))"


def _same_as_neighbour(*names: str) -> str:
    """SQL: true where the previous or next row of window ``w`` has the same (non-null) ``names``: a duplicate."""
    def same(function: str) -> str:
        return "coalesce(" + " AND ".join(f"{function}({n}) OVER w = {n}" for n in names) + ", false)"

    return f"({same('lag')} OR {same('lead')})"


# Per input: the checks of the outer select (over the canonical columns) and the window ``w`` they read, if any.
_CHECKS: dict[str, tuple[str, str]] = {
    "members": (
        f"CASE WHEN {_same_as_neighbour('member_id')} OR member_id IS NULL THEN "
        + _fail("'duplicate or null member_id ', coalesce(member_id, 'null'), ' in group \\'', _g, '\\''")
        + " END",
        "PARTITION BY _g ORDER BY member_id",
    ),
    "partitions": (
        f"CASE WHEN partition IS NULL OR partition < 0 OR topic IS NULL OR {_same_as_neighbour('topic', 'partition')}"
        + " THEN " + _fail(
            f"CASE WHEN {_same_as_neighbour('topic', 'partition')} THEN 'duplicate' ELSE 'negative or null' END, "
            "' partition ', coalesce(topic, 'null'), '-', coalesce(CAST(partition AS string), 'null')"
        )
        + " WHEN weight < 0 THEN " + _fail("'negative weight for partition ', topic") + " END",
        "PARTITION BY _g ORDER BY topic, partition",
    ),
    "owned": (
        "CASE WHEN partition < 0 THEN "
        + _fail("'negative partition in owned: ', topic, '-', CAST(partition AS string)") + " END",
        "",
    ),
}


@lru_cache(maxsize=256)
def _projection_sql(what: str, schema: T.StructType, batched: bool) -> str:
    """The SQL text that selects ``what``'s columns in canonical form (group column first), values unchecked.

    Raises :class:`AssignorInputError` for a missing column or a column of the wrong type. Cached per schema: the
    text depends on the schema only.
    """
    columns = _COLUMNS[what]
    fields = {f.name: f.dataType for f in schema.fields}
    group = "CAST(`group_id` AS string)" if batched else _ONE_GROUP.format(column=quoted(columns[0].name))
    selected = [f"{group} AS _g"]
    for column in columns:
        sql_type = _SQL_TYPES[column.kind]
        if column.name not in fields:
            if column.required:
                raise AssignorInputError(f"{what}: missing column {column.name!r}")
            value = f"CAST(NULL AS {sql_type})"
        else:
            data_type = fields[column.name]
            if not _accepts(column.kind, data_type):
                raise AssignorInputError(
                    f"{what}: column {column.name!r} has type {data_type.simpleString()}, expected {column.kind}"
                    + (" (any integral type)" if column.kind == "int" else "")
                )
            value = f"CAST({quoted(column.name)} AS {sql_type})"
        if column.name == "weight":
            value = f"coalesce({value}, 1.0D)"
        selected.append(f"{value} AS {column.name}")
    return f"SELECT {', '.join(selected)} FROM {{frame}}"


@lru_cache(maxsize=256)
def _normalised_sql(what: str, schema: T.StructType, batched: bool) -> str:
    """The one SQL text that selects ``what``'s columns in canonical form (:func:`_projection_sql`) and checks
    values."""
    columns = _COLUMNS[what]
    names = ", ".join(["_g", *(c.name for c in columns)])
    check, window = _CHECKS[what]
    # The one shuffle of members and partitions is the exchange of their window ``w``, partitioned by the group alone
    # (see ``partitioning``): duplicate checks compare neighbours in sorted order. The owned claims need no window:
    # their first join (with the members, ``prepare``) is keyed by the group and hashes them alike.
    windowed = f" WINDOW w AS ({window})" if window else ""
    return (
        f"SELECT {names} FROM ("
        f"SELECT *, {check} AS _bad FROM ({_projection_sql(what, schema, batched)}){windowed}"
        ") WHERE _bad IS NULL"
    )


def _is_batched(members: DataFrame, partitions: DataFrame, owned: DataFrame | None) -> bool:
    frames = {"members": members, "partitions": partitions}
    if owned is not None:
        frames["owned"] = owned
    having = {name for name, frame in frames.items() if "group_id" in frame.columns}
    if having and having != set(frames):
        raise AssignorInputError(
            f"group_id must be on all inputs or none; it is on {', '.join(sorted(having))} only"
        )
    for name in having:
        data_type = frames[name].schema["group_id"].dataType
        if not isinstance(data_type, T.StringType):
            raise AssignorInputError(f"{name}: column 'group_id' has type {data_type.simpleString()}, expected string")
    return bool(having)


def _source(what: str, frame: DataFrame, batched: bool, single: bool) -> tuple[str, DataFrame]:
    """The SQL text normalising ``what`` and the frame its ``{frame}`` stands for."""
    return _normalised_sql(what, frame.schema, batched), frame.coalesce(1) if single else frame


def _frame(what: str, frame: DataFrame, batched: bool, single: bool) -> DataFrame:
    text, source = _source(what, frame, batched, single)
    return query(text, frame=source)


def none_owned(session: SparkSession) -> DataFrame:
    """An empty owned frame in canonical form."""
    columns = ", ".join(f"CAST(NULL AS {_SQL_TYPES[c.kind]}) AS {c.name}" for c in _OWNED)
    return session.sql(f"SELECT CAST(NULL AS string) AS _g, {columns} WHERE false")


def _has_racks(members: DataFrame, partitions: DataFrame) -> bool:
    """False when no member has a rack or no partition a replica rack, as far as the plan (or the schema) proves."""
    if "rack" not in members.columns or "racks" not in partitions.columns:
        return False
    return not (
        known_empty(members.where("rack IS NOT NULL"))
        or known_empty(partitions.where("size(CAST(racks AS array<string>)) > 0"))
    )


def normalise_inputs(members: DataFrame, partitions: DataFrame, owned: DataFrame | None) -> Inputs:
    """Validate the schemas (eagerly) and values (lazily), and return the canonical frames.

    ``owned=None`` stays None (most plans never read it; building the empty frame costs a SQL text). Each input is
    one SQL text (see
    :mod:`groupcoord.plans.sql`); the facts ``has_owned`` / ``has_racks`` are asked of the raw inputs.
    """
    if not isinstance(members, DataFrame) or not isinstance(partitions, DataFrame):
        raise AssignorInputError("members and partitions must be Spark DataFrames")
    if owned is not None and not isinstance(owned, DataFrame):
        raise AssignorInputError("owned must be a Spark DataFrame or None")
    batched = _is_batched(members, partitions, owned)
    given = [members, partitions, *([] if owned is None else [owned])]
    size = sum(estimated_bytes(frame) for frame in given)
    n = partition_count(given, batched=batched, size=size)
    # Small inputs: one partition each, no exchange at all (see ``partitioning``).
    single = single_task(size)
    norm_members = _source("members", members, batched, single)
    norm_partitions = _source("partitions", partitions, batched, single)
    if owned is None:
        norm_owned = None
        has_owned = False
    else:
        norm_owned = _frame("owned", owned, batched, single)
        has_owned = not known_empty(owned.where("member_id IS NOT NULL AND topic IS NOT NULL"))
    has_racks = _has_racks(members, partitions)
    given_frames = {"members": members, "partitions": partitions, **({} if owned is None else {"owned": owned})}
    unchecked = {what: (_projection_sql(what, frame.schema, batched), frame) for what, frame in given_frames.items()}
    return Inputs(norm_members, norm_partitions, norm_owned, batched, n, single, has_owned=has_owned,
                  has_racks=has_racks, unchecked=unchecked)
