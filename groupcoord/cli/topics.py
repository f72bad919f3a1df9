"""``groupcoord topics``: create, list, describe, alter and produce to topics of the embedded topic log.

Output follows ``kafka-topics.sh``: ``Created topic NAME.``, one name per line for ``list``, and a ``Topic:`` line
plus one line per partition for ``describe``. Bad input (an illegal name, a duplicate, shrinking, fewer than one
partition) is one ``groupcoord: error:`` line, exit code 1, and no change on disk.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from groupcoord.cli.common import config_from_args, state_root_from_args, storage_settings
from groupcoord.cli.errors import CliError, UsageError

if TYPE_CHECKING:
    from groupcoord.state_root import StateRoot
    from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog, TopicsConfig

_PROGRESS_EVERY_S = 1.0

Handler = Callable[[argparse.Namespace], int]


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add ``topics`` and its subcommands."""
    topics = subparsers.add_parser("topics", help="create, list, describe, alter and produce to topics",
                                   description="Manage the topics of the embedded topic log.")
    topics.set_defaults(func=_missing_subcommand)
    commands = topics.add_subparsers(dest="topics_command", metavar="SUBCOMMAND", parser_class=type(topics))

    create = commands.add_parser("create", parents=[parent], help="create a topic (and the state root if missing)")
    create.add_argument("name", metavar="NAME")
    create.add_argument("--partitions", type=int, required=True, metavar="N", help="partition count (at least 1)")
    create.add_argument("--if-not-exists", action="store_true", help="succeed without change if the topic exists")
    create.add_argument("--racks", metavar="R0,R1,...", help="one rack per partition, comma-separated")
    create.set_defaults(func=_create)

    listing = commands.add_parser("list", parents=[parent], help="list topic names")
    listing.set_defaults(func=_list)

    describe = commands.add_parser("describe", parents=[parent], help="partitions, racks and offsets of topics")
    describe.add_argument("name", metavar="NAME", nargs="?", help="one topic (default: all)")
    describe.set_defaults(func=_describe)

    alter = commands.add_parser("alter", parents=[parent], help="grow a topic's partition count")
    alter.add_argument("name", metavar="NAME")
    alter.add_argument("--partitions", type=int, required=True, metavar="N", help="the new, larger partition count")
    alter.add_argument("--racks", metavar="R,...", help="racks of the added partitions, comma-separated")
    alter.set_defaults(func=_alter)

    produce = commands.add_parser(
        "produce", parents=[parent], help="append records from stdin or generated ones",
        description="Read 'KEY<TAB>VALUE' or 'VALUE' lines from stdin (or generate --num-records records) and append "
                    "them; keys are partitioned with Kafka's murmur2, keyless records round-robin.")
    produce.add_argument("name", metavar="NAME")
    produce.add_argument("--num-records", type=int, metavar="N", help="generate N records key-<i>/value-<i>")
    produce.add_argument("--partition", type=int, metavar="P", help="write every record to partition P")
    produce.add_argument("--batch-records", type=int, metavar="N",
                         help="records per commit (default spark.groupcoord.topics.produce.batch.records)")
    produce.set_defaults(func=_produce)


def _missing_subcommand(args: argparse.Namespace) -> int:
    raise UsageError("topics: choose a subcommand: create, list, describe, alter, produce")


def _topics_config(args: argparse.Namespace) -> TopicsConfig:
    from groupcoord.topics import TopicsConfig

    return TopicsConfig.from_config(config_from_args(args))


def _open_root(args: argparse.Namespace, *, create: bool = False) -> StateRoot:
    from groupcoord.state_root import StateRoot, StateRootError

    path = state_root_from_args(args)
    assert path is not None
    try:
        return StateRoot.open(path, create=create, storage=storage_settings(args))
    except StateRootError as exc:
        raise CliError(str(exc)) from None


def _catalog(args: argparse.Namespace, *, create_root: bool = False) -> TopicCatalog:
    from groupcoord.topics import TopicCatalog

    return TopicCatalog(_open_root(args, create=create_root), config=_topics_config(args))


def _racks(text: str | None) -> list[str | None] | None:
    if text is None:
        return None
    return [rack.strip() or None for rack in text.split(",")]


def _topic_errors_as_cli_errors(func: Handler) -> Handler:
    """Turn the topic layer's typed errors into one-line CLI errors with exit code 1."""

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        from groupcoord.topics import TopicError

        try:
            return func(args)
        except TopicError as exc:
            raise CliError(str(exc)) from exc

    return wrapper


@_topic_errors_as_cli_errors
def _create(args: argparse.Namespace) -> int:
    from groupcoord.topics.catalog import check_partition_count
    from groupcoord.topics.names import validate_topic_name

    # Validate before opening the root: bad input must not even create the state root directory.
    validate_topic_name(args.name)
    check_partition_count(args.partitions)
    catalog = _catalog(args, create_root=True)
    before = catalog.version()
    info = catalog.create(args.name, args.partitions, if_not_exists=args.if_not_exists, racks=_racks(args.racks))
    if catalog.version() == before:
        print(f"Topic '{info.name}' already exists with {info.partitions} partitions.")
    else:
        print(f"Created topic {info.name}.")
    return 0


@_topic_errors_as_cli_errors
def _list(args: argparse.Namespace) -> int:
    for info in _catalog(args).list():
        print(info.name)
    return 0


@_topic_errors_as_cli_errors
def _describe(args: argparse.Namespace) -> int:
    from groupcoord.topics import TopicLog

    catalog = _catalog(args)
    infos = [catalog.describe(args.name)] if args.name else catalog.list()
    for info in infos:
        offsets = TopicLog(catalog.root, info.name, catalog=catalog).offsets()
        total = sum(bounds.end - bounds.start for bounds in offsets.values())
        print(f"Topic: {info.name}\tTopicId: {info.topic_id}\tPartitionCount: {info.partitions}\tRecords: {total}")
        for partition in range(info.partitions):
            bounds = offsets[partition]
            print(f"\tTopic: {info.name}\tPartition: {partition}\tRack: {info.rack(partition) or 'none'}"
                  f"\tLogStartOffset: {bounds.start}\tLogEndOffset: {bounds.end}")
    return 0


@_topic_errors_as_cli_errors
def _alter(args: argparse.Namespace) -> int:
    info = _catalog(args).alter(args.name, args.partitions, new_racks=_racks(args.racks))
    print(f"Altered topic {info.name}: {info.partitions} partitions.")
    return 0


@_topic_errors_as_cli_errors
def _produce(args: argparse.Namespace) -> int:
    from groupcoord.topics import TopicLog

    if args.num_records is not None and args.num_records < 0:
        raise UsageError("--num-records must be at least 0")
    config = _topics_config(args)
    batch_records = args.batch_records if args.batch_records is not None else config.produce_batch_records
    if batch_records < 1:
        raise UsageError("--batch-records must be at least 1")
    catalog = _catalog(args)
    log = TopicLog(catalog.root, args.name, catalog=catalog)
    log.partitions()  # an unknown topic fails here, before stdin is read
    if args.partition is not None:
        _check_partition(log, args.partition)
    source = (_generated(args.num_records, args.partition) if args.num_records is not None
              else _stdin_records(sys.stdin.buffer, args.partition))
    produced = _produce_batches(log, source, batch_records=batch_records, total=args.num_records)
    print(f"Produced {produced} records to topic {args.name}.")
    return 0


def _check_partition(log: TopicLog, partition: int) -> None:
    from groupcoord.topics import UnknownTopicOrPartitionError

    count = log.partitions()
    if not 0 <= partition < count:
        raise UnknownTopicOrPartitionError(
            f"Partition {partition} of topic '{log.topic}' does not exist (it has {count} partitions)."
        )


def _produce_batches(log: TopicLog, records: Iterable[ProducerRecord], *, batch_records: int,
                     total: int | None) -> int:
    """Produce ``records`` in commits of ``batch_records``; report progress on stderr about once a second."""
    produced = 0
    started = last_report = time.monotonic()
    batch: list[ProducerRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) >= batch_records:
            produced += len(log.produce(batch).assigned)
            batch = []
            if time.monotonic() - last_report >= _PROGRESS_EVERY_S:
                last_report = time.monotonic()
                of_total = f"/{total}" if total is not None else ""
                rate = produced / max(last_report - started, 1e-9)
                sys.stderr.write(f"produced {produced}{of_total} records to {log.topic} ({rate:,.0f} records/s)\n")
                sys.stderr.flush()
    if batch:
        produced += len(log.produce(batch).assigned)
    return produced


def _generated(count: int, partition: int | None) -> Iterator[ProducerRecord]:
    from groupcoord.topics import ProducerRecord

    for i in range(count):
        yield ProducerRecord(f"value-{i}".encode(), key=f"key-{i}".encode(), partition=partition)


def _stdin_records(stream: BinaryIO, partition: int | None) -> Iterator[ProducerRecord]:
    """``KEY<TAB>VALUE`` lines become keyed records, lines without a tab keyless ones."""
    from groupcoord.topics import ProducerRecord

    for raw in stream:
        line = raw.rstrip(b"\r\n")
        key, tab, value = line.partition(b"\t")
        if tab:
            yield ProducerRecord(value, key=key, partition=partition)
        else:
            yield ProducerRecord(line, partition=partition)
