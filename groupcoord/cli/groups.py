"""``groupcoord groups``: list, describe, reset-offsets, delete and delete-offsets, as ``kafka-consumer-groups.sh``.

Reads (``list``, ``describe``, a ``reset-offsets`` dry run) come from the Delta state and need no coordinator.
Writes (``reset-offsets --execute``, ``delete``, ``delete-offsets``) go over the Kafka wire to the lease holder; with
no live holder this process takes the lease for the write and releases it afterwards
(:func:`groupcoord.admin.holder.admin_session`). Bad input is one ``groupcoord: error:`` line: exit 2 for a
malformed command line, date or duration, exit 1 for a missing state root, an unknown group or topic, a
malformed CSV, or a refusal by the coordinator.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groupcoord.cli.common import config_from_args, state_root_from_args, storage_settings
from groupcoord.cli.errors import CliError, UsageError

if TYPE_CHECKING:
    from groupcoord.admin.reset import PlannedOffset, ResetStrategy
    from groupcoord.state_root import StateRoot

Handler = Callable[[argparse.Namespace], int]

_OFFSET_HEADERS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                   "CLIENT-ID")
_RESET_HEADERS = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
_INACTIVE_STATES = ("Empty", "Dead")
_RESET_MODES = ("to_earliest", "to_latest", "to_offset", "shift_by", "to_datetime", "by_duration", "to_current",
                "from_file", "as_of")


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add ``groups`` and its subcommands."""
    groups = subparsers.add_parser("groups", help="list, describe, reset offsets of and delete consumer groups",
                                   description="Manage consumer groups (kafka-consumer-groups.sh conventions).")
    groups.set_defaults(func=_missing_subcommand)
    commands = groups.add_subparsers(dest="groups_command", metavar="SUBCOMMAND", parser_class=type(groups))

    listing = commands.add_parser("list", parents=[parent], help="list groups (from the Delta state)")
    listing.add_argument("--state", nargs="?", const="", metavar="S[,S...]",
                         help="print each group's state; with a value, only groups in those states")
    listing.set_defaults(func=_list)

    describe = commands.add_parser("describe", parents=[parent], help="offsets, members or state of a group")
    describe.add_argument("--group", required=True, metavar="G")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--offsets", dest="view", action="store_const", const="offsets",
                      help="committed offsets, log-end offsets, lag and owners (the default)")
    view.add_argument("--members", dest="view", action="store_const", const="members", help="the members")
    view.add_argument("--state", dest="view", action="store_const", const="state", help="the group's state")
    describe.add_argument("--verbose", action="store_true", help="more columns")
    describe.set_defaults(func=_describe, view="offsets")

    reset = commands.add_parser(
        "reset-offsets", parents=[parent], help="plan or execute an offset reset of an inactive group",
        description="Plan (--dry-run, the default) or execute an offset reset. Offsets are clamped to the log-start "
                    "and log-end offsets; a group with active members is refused.")
    reset.add_argument("--group", required=True, metavar="G")
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument("--topic", action="append", metavar="T[:P,...]", help="a topic, or some of its partitions")
    scope.add_argument("--all-topics", action="store_true", help="every topic the group has committed offsets for")
    modes = reset.add_mutually_exclusive_group(required=True)
    modes.add_argument("--to-earliest", action="store_true", help="the log-start offset")
    modes.add_argument("--to-latest", action="store_true", help="the log-end offset")
    modes.add_argument("--to-offset", type=int, metavar="N", help="offset N")
    modes.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (may be negative)")
    modes.add_argument("--to-datetime", metavar="ISO", help="the first offset at or after this time (UTC if no zone)")
    modes.add_argument("--by-duration", metavar="PnDTnHnMnS", help="the first offset at or after now minus this")
    modes.add_argument("--to-current", action="store_true", help="the committed offset")
    modes.add_argument("--from-file", metavar="CSV", help="offsets from Kafka's CSV (TOPIC,PARTITION,OFFSET)")
    modes.add_argument("--as-of", metavar="VERSION|TIME",
                       help="the group's committed offsets at a version or time of the Delta history (an undo)")
    run = reset.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    run.add_argument("--execute", action="store_true", help="commit the plan")
    reset.add_argument("--export", action="store_true", help="print the plan as Kafka's CSV instead of a table")
    reset.set_defaults(func=_reset)

    delete = commands.add_parser("delete", parents=[parent], help="delete an inactive group and its offsets")
    delete.add_argument("--group", required=True, metavar="G")
    delete.set_defaults(func=_delete)

    delete_offsets = commands.add_parser("delete-offsets", parents=[parent],
                                         help="delete a group's committed offsets of one topic")
    delete_offsets.add_argument("--group", required=True, metavar="G")
    delete_offsets.add_argument("--topic", required=True, metavar="T[:P,...]")
    delete_offsets.set_defaults(func=_delete_offsets)


def _missing_subcommand(args: argparse.Namespace) -> int:
    raise UsageError("groups: choose a subcommand: list, describe, reset-offsets, delete, delete-offsets")


def open_root(args: argparse.Namespace) -> StateRoot:
    """The existing state root the command names; a missing or invalid one is a one-line error (exit 1)."""
    from groupcoord.state_root import StateRoot, StateRootError

    path = state_root_from_args(args)
    assert path is not None
    try:
        return StateRoot.open(path, storage=storage_settings(args))
    except StateRootError as exc:
        raise CliError(str(exc)) from None


def _admin_errors_as_cli_errors(func: Handler) -> Handler:
    """Turn the admin layer's typed errors into one-line CLI errors."""

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        from groupcoord.admin.describe import GroupNotFoundError
        from groupcoord.admin.holder import CoordinatorUnreachableError
        from groupcoord.admin.reset import ResetError
        from groupcoord.admin.timeparse import TimeFormatError
        from groupcoord.member.errors import CoordinatorUnavailableError
        from groupcoord.state.history import StateHistoryError
        from groupcoord.topics import TopicError

        try:
            return func(args)
        except (TimeFormatError, StateHistoryError) as exc:
            raise UsageError(str(exc)) from None
        except GroupNotFoundError as exc:
            raise CliError(str(exc)) from None
        except (TopicError, ResetError, CoordinatorUnreachableError, CoordinatorUnavailableError) as exc:
            raise CliError(str(exc)) from None

    return wrapper


# --- list and describe ------------------------------------------------------------------------------------------------

@_admin_errors_as_cli_errors
def _list(args: argparse.Namespace) -> int:
    from groupcoord.admin.describe import list_groups
    from groupcoord.admin.text_table import format_table

    groups = list_groups(open_root(args))
    if args.state is None:
        for group in groups:
            print(group.group_id)
        return 0
    wanted = {s.strip().lower() for s in args.state.split(",") if s.strip()}
    rows = [(g.group_id, g.state) for g in groups if not wanted or g.state.lower() in wanted]
    print(format_table(("GROUP", "STATE"), rows))
    return 0


@_admin_errors_as_cli_errors
def _describe(args: argparse.Namespace) -> int:
    root = open_root(args)
    show: dict[str, Callable[[StateRoot, str, bool], str]] = {
        "offsets": _offsets_text, "members": _members_text, "state": _state_text}
    print(show[args.view](root, args.group, args.verbose))
    return 0


def _offsets_text(root: StateRoot, group_id: str, verbose: bool) -> str:
    from groupcoord.admin.describe import group_members, group_offsets
    from groupcoord.admin.text_table import format_table

    rows = group_offsets(root, group_id)
    headers: tuple[str, ...] = _OFFSET_HEADERS
    table_rows: list[tuple[object, ...]] = [
        (r.group_id, r.topic, r.partition, r.current_offset, r.log_end_offset, r.lag, r.consumer_id, r.host,
         r.client_id) for r in rows]
    if verbose:
        headers = (*headers[:3], "LEADER-EPOCH", *headers[3:], "COMMIT-TIME")
        table_rows = [(*t[:3], r.leader_epoch, *t[3:], r.commit_time.isoformat() if r.commit_time else None)
                      for t, r in zip(table_rows, rows, strict=True)]
    return _no_members_note(group_id, bool(group_members(root, group_id))) + format_table(headers, table_rows)


def _members_text(root: StateRoot, group_id: str, verbose: bool) -> str:
    from groupcoord.admin.describe import describe_group, group_members
    from groupcoord.admin.text_table import format_table

    describe_group(root, group_id)
    members = group_members(root, group_id)
    rows: list[tuple[object, ...]]
    if verbose:
        headers: tuple[str, ...] = ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                    "ASSIGNMENT")
        rows = [(m.group_id, m.member_id, m.group_instance_id, m.host, m.client_id, len(m.partitions),
                 _assignment_text(m.partitions)) for m in members]
    else:
        headers = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
        rows = [(m.group_id, m.member_id, m.host, m.client_id, len(m.partitions)) for m in members]
    return _no_members_note(group_id, bool(members)) + format_table(headers, rows)


def _state_text(root: StateRoot, group_id: str, verbose: bool) -> str:
    from groupcoord.admin.describe import describe_group
    from groupcoord.admin.text_table import format_table
    from groupcoord.log.lease import current_holder

    group = describe_group(root, group_id)
    lease = current_holder(root)
    coordinator = f"{lease.address} ({lease.epoch})" if lease is not None and lease.live else None
    headers: tuple[str, ...] = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
    row: tuple[object, ...] = (group.group_id, coordinator, group.protocol, group.state, group.members)
    if verbose:
        headers, row = (*headers, "GENERATION"), (*row, group.generation)
    return format_table(headers, [row])


def _no_members_note(group_id: str, has_members: bool) -> str:
    return "" if has_members else f"Consumer group '{group_id}' has no active members.\n\n"


def _assignment_text(partitions: Sequence[tuple[str, int]]) -> str | None:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return ",".join(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(by_topic.items())) or None


# --- reset-offsets ----------------------------------------------------------------------------------------------------

def parse_topic_spec(spec: str, counts: dict[str, int]) -> list[tuple[str, int]]:
    """``T`` (every partition) or ``T:P,P,...`` as (topic, partition) pairs; unknown topics or partitions raise."""
    from groupcoord.topics import UnknownTopicOrPartitionError

    topic, colon, partitions = spec.partition(":")
    if topic not in counts:
        raise UnknownTopicOrPartitionError(f"topic '{topic}' does not exist")
    if not colon:
        return [(topic, p) for p in range(counts[topic])]
    try:
        wanted = sorted({int(p) for p in partitions.split(",")})
    except ValueError:
        raise UsageError(f"malformed --topic {spec!r}: expected TOPIC or TOPIC:PARTITION,PARTITION,...") from None
    for partition in wanted:
        if not 0 <= partition < counts[topic]:
            raise UnknownTopicOrPartitionError(
                f"partition {partition} of topic '{topic}' does not exist (it has {counts[topic]} partitions)")
    return [(topic, p) for p in wanted]


@_admin_errors_as_cli_errors
def _reset(args: argparse.Namespace) -> int:
    from groupcoord.admin.describe import committed_offsets, list_groups
    from groupcoord.admin.log_offsets import log_bounds, partition_counts
    from groupcoord.admin.reset import ResetInputs, export_csv, parse_csv, plan_reset
    from groupcoord.admin.text_table import format_table

    root = open_root(args)
    counts = partition_counts(root)
    current = committed_offsets(root, args.group)
    from_file = parse_csv(_read_file(args.from_file), group_id=args.group, source=args.from_file) \
        if args.from_file else None
    if args.topic:
        scope = [tp for spec in args.topic for tp in parse_topic_spec(spec, counts)]
    elif args.all_topics:
        scope = sorted(current)
        if not scope:
            raise CliError(f"consumer group '{args.group}' has no committed offsets to reset (--all-topics)")
    elif from_file is not None:
        scope = sorted(from_file)
    else:
        raise UsageError("reset-offsets needs --topic T[:P,...] or --all-topics")
    for topic, partition in scope:  # every partition, also from a CSV or the group's offsets, must exist
        parse_topic_spec(f"{topic}:{partition}", counts)
    strategy = _strategy(args, root, {t for t, _ in scope}, from_file)
    plan = plan_reset(strategy, ResetInputs(scope=tuple(scope), current=current,
                                            bounds=log_bounds(root, {t for t, _ in scope})))
    if args.execute:
        _execute_reset(root, args, plan)
    else:
        states = {g.group_id: g.state for g in list_groups(root)}
        _refuse_active(args.group, states.get(args.group, "Dead"))
    if args.export:
        sys.stdout.write(export_csv(plan))
    else:
        print(format_table(_RESET_HEADERS, [(args.group, p.topic, p.partition, p.offset) for p in plan]))
    return 0


def _strategy(args: argparse.Namespace, root: StateRoot, topics: set[str],
              from_file: dict[tuple[str, int], int] | None) -> ResetStrategy:
    import datetime as dt

    from groupcoord.admin import reset
    from groupcoord.admin.describe import committed_offsets
    from groupcoord.admin.log_offsets import offsets_for_time
    from groupcoord.admin.timeparse import parse_duration, parse_instant

    def at_time(when: dt.datetime) -> reset.ToOffsets:
        found = {(t, p): o for t in sorted(topics) for p, o in offsets_for_time(root, t, when).items()}
        return reset.ToOffsets(found, "log-end")

    if args.to_earliest:
        return reset.ToEarliest()
    if args.to_latest:
        return reset.ToLatest()
    if args.to_offset is not None:
        return reset.ToOffset(args.to_offset)
    if args.shift_by is not None:
        return reset.ShiftBy(args.shift_by)
    if args.to_datetime is not None:
        return at_time(parse_instant(args.to_datetime))
    if args.by_duration is not None:
        return at_time(dt.datetime.now(dt.UTC) - parse_duration(args.by_duration))
    if args.to_current:
        return reset.ToCurrent()
    if from_file is not None:
        return reset.ToOffsets(from_file, "error", source=args.from_file)
    as_of: int | str = int(args.as_of) if args.as_of.strip().isdigit() else args.as_of
    if isinstance(as_of, str):
        parse_instant(as_of)  # a malformed time is a usage error with the expected format
    return reset.ToOffsets(committed_offsets(root, args.group, as_of=as_of), "skip")


def _refuse_active(group_id: str, state: str) -> None:
    if state not in _INACTIVE_STATES:
        raise CliError(f"Assignments can only be reset if the group '{group_id}' is inactive, but the current state "
                       f"is {state}.")


def _execute_reset(root: StateRoot, args: argparse.Namespace, plan: Sequence[PlannedOffset]) -> None:
    from groupcoord.admin.holder import admin_session
    from groupcoord.topics.app_transactions import RESET_OFFSETS_METADATA

    with admin_session(root, config_from_args(args)) as client:
        live = client.describe_group(args.group)
        _refuse_active(args.group, live.state)
        errors = client.commit_offsets(args.group, {(p.topic, p.partition): p.offset for p in plan},
                                       metadata=RESET_OFFSETS_METADATA)
    failed = sorted((tp, e) for tp, e in errors.items() if e.is_error)
    if failed:
        (topic, partition), error = failed[0]
        raise CliError(f"the coordinator refused the reset of {len(failed)} partition(s), first {topic}-{partition}: "
                       f"{error.name} ({error.description})")


def _read_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None


# --- delete and delete-offsets ----------------------------------------------------------------------------------------

@_admin_errors_as_cli_errors
def _delete(args: argparse.Namespace) -> int:
    from groupcoord.admin.describe import describe_group
    from groupcoord.admin.holder import admin_session

    root = open_root(args)
    describe_group(root, args.group)  # an unknown group fails here, without taking the lease
    with admin_session(root, config_from_args(args)) as client:
        error = client.delete_group(args.group)
    if error.is_error:
        raise CliError(f"group '{args.group}' could not be deleted: {error.name} ({error.description})")
    print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
    return 0


@_admin_errors_as_cli_errors
def _delete_offsets(args: argparse.Namespace) -> int:
    from groupcoord.admin.describe import committed_offsets, describe_group
    from groupcoord.admin.holder import admin_session
    from groupcoord.admin.log_offsets import partition_counts
    from groupcoord.admin.text_table import format_table

    root = open_root(args)
    describe_group(root, args.group)
    topic = args.topic.partition(":")[0]
    committed = sorted(p for t, p in committed_offsets(root, args.group) if t == topic)
    counts = partition_counts(root)
    if topic in counts:
        partitions = [p for _, p in parse_topic_spec(args.topic, counts)]
        if ":" not in args.topic:
            partitions = committed or partitions
    elif committed:  # offsets of a topic that is gone from the catalog may still be deleted
        partitions = committed
    else:
        raise CliError(f"topic '{topic}' does not exist")
    with admin_session(root, config_from_args(args)) as client:
        result = client.delete_offsets(args.group, topic, partitions)
    if result.error.is_error:
        raise CliError(f"offsets of topic '{topic}' of group '{args.group}' could not be deleted: "
                       f"{result.error.name} ({result.error.description})")
    failed = [p for p, e in result.partitions.items() if e.is_error]
    headline = (f"Deleted the committed offsets of topic '{topic}' for group '{args.group}'." if not failed
                else f"Some committed offsets of topic '{topic}' for group '{args.group}' were not deleted:")
    rows = [(topic, p, f"Error: {e.name}" if e.is_error else "Successful")
            for p, e in sorted(result.partitions.items())]
    print(f"{headline}\n\n{format_table(('TOPIC', 'PARTITION', 'STATUS'), rows)}")
    if failed:
        raise CliError(f"{len(failed)} of {len(rows)} partition offsets of topic '{topic}' were not deleted")
    return 0
