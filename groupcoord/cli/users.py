"""``groupcoord users``: add, list and remove the users a SASL listener authenticates.

``add`` reads the password from standard input (``--password-stdin``) or a file (``--password-file``), never from
the command line (it would show in ``ps`` and shell history); it is salted in this process and only the salted
form goes to the coordinator (AlterUserScramCredentials), which stores SCRAM keys or a salted hash. ``list`` reads
the state root. With no live coordinator the command takes the lease for the write: that is how the first user is
created (docs/security.md). Bad input is one ``groupcoord: error:`` line, exit 2 for the command line, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from groupcoord.cli.common import config_from_args
from groupcoord.cli.errors import CliError, UsageError
from groupcoord.cli.groups import open_root

if TYPE_CHECKING:
    from groupcoord.state_root import StateRoot

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add ``users`` and its subcommands."""
    users = subparsers.add_parser("users", help="add, list and remove SASL users",
                                  description="Manage the users SASL listeners authenticate (credentials live in "
                                              "the state root, never as passwords).")
    users.set_defaults(func=_missing_subcommand)
    commands = users.add_subparsers(dest="users_command", metavar="SUBCOMMAND", parser_class=type(users))

    add = commands.add_parser("add", parents=[parent], help="add a user, or change its password")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--mechanism", required=True, type=str.upper, choices=MECHANISMS)
    add.add_argument("--iterations", type=int, default=8192, metavar="N",
                     help="PBKDF2 iterations, 4096-16384 (default 8192)")
    source = add.add_mutually_exclusive_group(required=True)
    source.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    source.add_argument("--password-file", metavar="FILE", help="read the password from the first line of FILE")
    add.set_defaults(func=_add)

    listing = commands.add_parser("list", parents=[parent], help="every user and its mechanisms (no secrets)")
    listing.set_defaults(func=_list)

    remove = commands.add_parser("remove", parents=[parent], help="remove a user's credentials")
    remove.add_argument("name", metavar="NAME")
    remove.add_argument("--mechanism", type=str.upper, choices=MECHANISMS,
                        help="only this mechanism's credential (default: all of the user's)")
    remove.set_defaults(func=_remove)


def _missing_subcommand(args: argparse.Namespace) -> int:
    raise UsageError("users: choose a subcommand: add, list, remove")


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        lines = sys.stdin.read().splitlines()
    else:
        try:
            with open(args.password_file, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError as exc:
            raise CliError(f"cannot read {args.password_file}: {exc.strerror or exc}") from None
    if not lines or not lines[0]:
        raise UsageError("users add: the password is empty")
    return lines[0]


def admin_call(func: Any, *call_args: Any) -> Any:
    """``func(*call_args)``, an admin write through the lease holder, with its refusals as one-line CLI errors."""
    from groupcoord.admin.holder import AdminChangeError, CoordinatorUnreachableError
    from groupcoord.member.errors import CoordinatorUnavailableError
    from groupcoord.security.config import SecretMissingError

    try:
        return func(*call_args)
    except (AdminChangeError, CoordinatorUnreachableError, CoordinatorUnavailableError, SecretMissingError) as exc:
        raise CliError(str(exc)) from None


def _add(args: argparse.Namespace) -> int:
    from groupcoord.admin.users import add_user
    from groupcoord.security.scram import MAX_ITERATIONS, MIN_ITERATIONS

    if not args.name:
        raise UsageError("users add: the user name is empty")
    if not MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:
        raise UsageError(f"users add: --iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    password = _password(args)
    admin_call(add_user, _open_or_create_root(args), config_from_args(args), args.name, args.mechanism, password,
                args.iterations)
    print(f"User '{args.name}' now has a {args.mechanism} credential.")
    return 0


def _open_or_create_root(args: argparse.Namespace) -> StateRoot:
    """The state root, created if it does not exist yet (the first user may come before anything else)."""
    from groupcoord.cli.common import state_root_from_args, storage_settings
    from groupcoord.state_root import StateRoot, StateRootError

    path = state_root_from_args(args)
    assert path is not None
    try:
        return StateRoot.open(path, create=True, storage=storage_settings(args))
    except StateRootError as exc:
        raise CliError(str(exc)) from None


def _list(args: argparse.Namespace) -> int:
    from groupcoord.admin.text_table import format_table
    from groupcoord.admin.users import stored_users

    credentials = stored_users(open_root(args))
    rows = [(user, mechanism, str(credential.iterations)) for user, mechanism, credential in credentials.items()]
    if rows:
        print(format_table(("USER", "MECHANISM", "ITERATIONS"), rows))
    return 0


def _remove(args: argparse.Namespace) -> int:
    from groupcoord.admin.users import remove_user, stored_users

    root = open_root(args)
    held = list(stored_users(root).mechanisms(args.name))
    mechanisms = [args.mechanism] if args.mechanism else held
    if not held or (args.mechanism and args.mechanism not in held):
        raise CliError(f"user '{args.name}' has no {args.mechanism or 'credential'}")
    admin_call(remove_user, root, config_from_args(args), args.name, mechanisms)
    print(f"Removed the {', '.join(mechanisms)} credential(s) of user '{args.name}'.")
    return 0
