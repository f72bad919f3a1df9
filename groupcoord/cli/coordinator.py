"""``groupcoord coordinator status``: who holds the lease of a state root, in which epoch, until when, and the
record log's version.

Exit codes: 0 when a coordinator holds the lease, 3 when none does (never taken, released or expired), 1 for a
missing state root. Reads Delta only; it never contacts the coordinator.
"""

from __future__ import annotations

import argparse
from typing import Any

from groupcoord.cli.errors import UsageError

EXIT_NO_HOLDER = 3


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add ``coordinator`` and its ``status`` subcommand."""
    coordinator = subparsers.add_parser("coordinator", help="the coordinator lease of a state root",
                                        description="Inspect the coordinator of a state root.")
    coordinator.set_defaults(func=_missing_subcommand)
    commands = coordinator.add_subparsers(dest="coordinator_command", metavar="SUBCOMMAND",
                                          parser_class=type(coordinator))
    status = commands.add_parser("status", parents=[parent], help="lease holder, epoch, expiry and log version")
    status.set_defaults(func=_status)


def _missing_subcommand(args: argparse.Namespace) -> int:
    raise UsageError("coordinator: choose a subcommand: status")


def _status(args: argparse.Namespace) -> int:
    from groupcoord.cli.groups import open_root
    from groupcoord.log.lease import current_holder
    from groupcoord.storage.tables import is_table, open_table

    root = open_root(args)
    lease = current_holder(root)
    log_version = open_table(root.log_path).version() if is_table(root.log_path) else None
    fields: list[tuple[str, object]] = [("State root", root.location)]
    if lease is None:
        fields.append(("Holder", "none (the lease was never taken)"))
    else:
        state = "live" if lease.live else ("released" if lease.released else "expired")
        fields += [("Holder", lease.holder), ("Address", lease.address), ("Epoch", lease.epoch),
                   ("Expiry", lease.expiry.isoformat()), ("Renewed", lease.renewed_at.isoformat()),
                   ("Lease", state)]
    fields.append(("Log version", "none (no log yet)" if log_version is None else log_version))
    width = max(len(name) for name, _ in fields) + 1
    for name, value in fields:
        print(f"{name + ':':<{width}} {value}")
    return 0 if lease is not None and lease.live else EXIT_NO_HOLDER
