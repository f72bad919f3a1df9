"""``groupcoord demo``: the coordinator core on a manual clock (what ``make run`` shows until ingestion exists)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo", parents=[parent], help="show three members joining a group and one failing, on a manual clock",
        description="Three members join a group on a manual clock; one pauses past its session timeout; each "
                    "generation's members, leader and assignment are printed.")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import logging

    from groupcoord.coordinator.demo import run_demo

    if not args.debug:  # the demo prints its own timeline; the coordinator's INFO lines would interleave
        logging.getLogger("groupcoord.coordinator").setLevel(logging.WARNING)

    run_demo()
    return 0
