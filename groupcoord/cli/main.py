"""``groupcoord`` entry point: builds the argparse tree and maps every error to one line and an exit code."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from groupcoord import __version__
from groupcoord.cli.common import common_parser
from groupcoord.cli.errors import EXIT_USAGE, exit_code_for
from groupcoord.config.console import log_to_stderr, one_line

# Each module has ``register(subparsers, parent)`` adding its subcommand(s); a handler is stored as ``func``.
# Heavy imports (Spark, deltalake) happen inside handlers, so ``groupcoord --help`` stays fast.
COMMAND_MODULES: tuple[str, ...] = ("groupcoord.cli.topics", "groupcoord.cli.serve", "groupcoord.cli.demo",
                                     "groupcoord.cli.groups", "groupcoord.cli.coordinator", "groupcoord.cli.dev_broker",
                                     "groupcoord.cli.cluster", "groupcoord.cli.users",
                                     "groupcoord.cli.acls")

log = logging.getLogger("groupcoord")

# What a shell reports for a process killed by SIGPIPE (128 + 13); ``groupcoord ... | head`` ends this way.
EXIT_BROKEN_PIPE = 141


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one ``groupcoord: error:`` line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"groupcoord: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The full parser tree."""
    parser = _Parser(prog="groupcoord", description="Kafka consumer groups for Spark, with state in Delta tables.")
    parser.add_argument("--version", action="version", version=f"groupcoord {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    parent = common_parser()
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers, parent)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` and return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    # Only entry points configure logging, and only the groupcoord logger: stderr, so stdout stays parseable.
    log_to_stderr(level=logging.DEBUG if debug else logging.INFO)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader went away (``groupcoord ... | head``): stop quietly, as Unix tools do, and keep Python from
        # complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # the single mapper from errors to exit codes
        if debug:
            raise
        sys.stderr.write(f"groupcoord: error: {one_line(exc)}\n")
        return exit_code_for(exc)
    except KeyboardInterrupt as exc:
        return exit_code_for(exc)


if __name__ == "__main__":
    sys.exit(main())
