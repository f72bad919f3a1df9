"""Validation and normalisation of the three input DataFrames.

Every assignor sees the same normalised frames: a group column ``_g`` (the caller's ``group_id``, or one constant
group), optional columns filled with nulls, integral columns cast to ``int`` and weights to ``double``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F
from pyspark.sql import types as T

from groupcoord.assignors.errors import AssignorInputError
from groupcoord.assignors.partitioning import estimated_bytes, partition_count
from groupcoord.assignors.plan_facts import known_empty

GROUP = "_g"
"""The internal group column; the caller's ``group_id`` is renamed to it."""

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType)


@dataclass(frozen=True)
class _Column:
    name: str
    kind: str  # "string", "int", "double" or "strings"
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
    :mod:`groupcoord.assignors.partitioning`). ``owned`` carries ``_top``, the group's highest claim generation.
    ``has_owned`` and ``has_racks`` are False only when the plan proves that nothing is owned, or that no member has
    a rack or no partition a replica rack (:mod:`groupcoord.assignors.plan_facts`); assignors then skip the branch.
    """

    members: DataFrame
    partitions: DataFrame
    owned: DataFrame
    batched: bool
    partition_count: int
    has_owned: bool = True
    has_racks: bool = True


def _accepts(kind: str, data_type: T.DataType) -> bool:
    if kind == "string":
        return isinstance(data_type, T.StringType)
    if kind == "int":
        return isinstance(data_type, _INTEGRAL)
    if kind == "double":
        return isinstance(data_type, _NUMERIC)
    return isinstance(data_type, T.ArrayType) and isinstance(data_type.elementType, T.StringType)


def _one_group(column: Column) -> Column:
    """The constant group ``""`` of an unbatched call, written so that the optimiser cannot fold it.

    A literal would be folded away, and with it the hash partitioning by group that spares every later shuffle.
    """
    return F.coalesce(F.substring(column.cast("string"), 1, 0), F.lit(""))


def _normalise(frame: DataFrame, what: str, columns: tuple[_Column, ...], batched: bool) -> DataFrame:
    """Check ``frame``'s columns against ``columns`` and select them in canonical form, group column first."""
    fields = {f.name: f.dataType for f in frame.schema.fields}
    selected: list[Column] = [
        (F.col("group_id") if batched else _one_group(F.col(columns[0].name))).cast("string").alias(GROUP),
    ]
    for column in columns:
        if column.name not in fields:
            if column.required:
                raise AssignorInputError(f"{what}: missing column {column.name!r}")
            selected.append(F.lit(None).cast(_NULL_TYPES[column.kind]).alias(column.name))
            continue
        data_type = fields[column.name]
        if not _accepts(column.kind, data_type):
            raise AssignorInputError(
                f"{what}: column {column.name!r} has type {data_type.simpleString()}, expected {column.kind}"
                + (" (any integral type)" if column.kind == "int" else "")
            )
        selected.append(F.col(column.name).cast(_NULL_TYPES[column.kind]).alias(column.name))
    return frame.select(*selected)


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


def _fail_when(frame: DataFrame, condition: Column, message: Column) -> DataFrame:
    """Make evaluating ``frame`` raise ``message`` on any row where ``condition`` holds (lazily, inside the plan)."""
    check = F.when(condition, F.raise_error(F.concat(F.lit("AssignorInputError: "), message)))
    return frame.where(check.isNull())


def normalise_inputs(members: DataFrame, partitions: DataFrame, owned: DataFrame | None) -> Inputs:
    """Validate the schemas (eagerly) and values (lazily), and return the canonical frames.

    ``owned=None`` becomes an empty owned frame in the members' session.
    """
    if not isinstance(members, DataFrame) or not isinstance(partitions, DataFrame):
        raise AssignorInputError("members and partitions must be Spark DataFrames")
    if owned is not None and not isinstance(owned, DataFrame):
        raise AssignorInputError("owned must be a Spark DataFrame or None")
    batched = _is_batched(members, partitions, owned)
    norm_members = _normalise(members, "members", _MEMBERS, batched)
    norm_partitions = _normalise(partitions, "partitions", _PARTITIONS, batched)
    if owned is None:
        schema = T.StructType(
            [T.StructField(GROUP, T.StringType())]
            + [T.StructField(c.name, _NULL_TYPES[c.kind]) for c in _OWNED]
        )
        norm_owned = members.sparkSession.createDataFrame([], schema)
    else:
        norm_owned = _normalise(owned, "owned", _OWNED, batched)
    claimed = F.col("member_id").isNotNull() & F.col("topic").isNotNull()
    has_owned = owned is not None and not known_empty(norm_owned.where(claimed))
    has_racks = not (
        known_empty(norm_members.where(F.col("rack").isNotNull()))
        or known_empty(norm_partitions.where(F.size("racks") > 0))
    )
    given = [members, partitions, *([] if owned is None else [owned])]
    # A single group is one partition whatever its size: no need to optimise the inputs for an estimate.
    size = sum(estimated_bytes(frame) for frame in given) if batched else 0
    n = partition_count(given, batched=batched, size=size)
    # The one shuffle of each input is the exchange of its first window, partitioned by the group alone (see
    # ``partitioning``): duplicate checks compare neighbours in sorted order, and the owned claims' top generation.
    by_group = Window.partitionBy(GROUP)
    by_member = by_group.orderBy("member_id")
    norm_members = norm_members.withColumn("_dup", _same_as_neighbour(by_member, "member_id"))
    norm_members = _fail_when(
        norm_members,
        F.col("_dup") | F.col("member_id").isNull(),
        F.concat(F.lit("duplicate or null member_id "), F.coalesce(F.col("member_id"), F.lit("null")),
                 F.lit(" in group '"), F.col(GROUP), F.lit("'")),
    ).drop("_dup")
    by_partition = by_group.orderBy("topic", "partition")
    norm_partitions = norm_partitions.withColumn("_dup", _same_as_neighbour(by_partition, "topic", "partition"))
    norm_partitions = _fail_when(
        norm_partitions,
        F.col("partition").isNull() | (F.col("partition") < 0) | F.col("topic").isNull() | F.col("_dup"),
        F.concat(
            F.when(F.col("_dup"), F.lit("duplicate")).otherwise(F.lit("negative or null")),
            F.lit(" partition "), F.coalesce(F.col("topic"), F.lit("null")), F.lit("-"),
            F.coalesce(F.col("partition").cast("string"), F.lit("null")),
        ),
    ).drop("_dup")
    norm_owned = norm_owned.withColumn(
        "_top", F.max(F.when(claimed, F.coalesce(F.col("generation"), F.lit(-1)))).over(by_group)
    )
    norm_partitions = norm_partitions.withColumn("weight", F.coalesce(F.col("weight"), F.lit(1.0)))
    norm_partitions = _fail_when(
        norm_partitions, F.col("weight") < 0, F.concat(F.lit("negative weight for partition "), F.col("topic"))
    )
    norm_owned = _fail_when(
        norm_owned,
        F.col("partition") < 0,
        F.concat(F.lit("negative partition in owned: "), F.col("topic"), F.lit("-"), F.col("partition").cast("string")),
    )
    return Inputs(norm_members, norm_partitions, norm_owned, batched, n, has_owned=has_owned, has_racks=has_racks)


def _same_as_neighbour(window: WindowSpec, *names: str) -> Column:
    """True where the previous or next row of ``window`` has the same (non-null) ``names``: a duplicate."""
    def same(offset: int) -> Column:
        matches = [F.lag(name, offset).over(window) == F.col(name) for name in names]
        condition = matches[0]
        for match in matches[1:]:
            condition = condition & match
        return F.coalesce(condition, F.lit(False))

    return same(1) | same(-1)
