"""CLI errors and the one mapper from exceptions to exit codes.

Exit codes: 0 success, 1 runtime error, 2 usage error. Subcommands may define more (``coordinator status``
exits 3 when there is no holder) by raising :class:`CliError` with their own code.
"""

from __future__ import annotations

from groupcoord.config.registry import ConfigError

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2


class CliError(Exception):
    """An error to show as one line ``groupcoord: error: <message>`` with ``exit_code``."""

    exit_code = EXIT_RUNTIME

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(CliError):
    """The command line itself is wrong (exit code 2)."""

    exit_code = EXIT_USAGE


def exit_code_for(exc: BaseException) -> int:
    """Map any exception to the CLI's exit code."""
    if isinstance(exc, CliError):
        return exc.exit_code
    if isinstance(exc, ConfigError):
        return EXIT_USAGE
    if isinstance(exc, KeyboardInterrupt):
        return 130
    return EXIT_RUNTIME


