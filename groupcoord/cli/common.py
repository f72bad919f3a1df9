"""Options every subcommand shares, and how they resolve (state root, configuration)."""

from __future__ import annotations

import argparse
import os

from groupcoord.cli.errors import UsageError
from groupcoord.config import Config, resolve_config

STATE_ROOT_ENV = "GROUPCOORD_STATE_ROOT"


def common_parser() -> argparse.ArgumentParser:
    """A parent parser with ``--state-root``, ``--conf``, ``--conf-file`` and ``--debug``."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("common options")
    group.add_argument("--state-root", metavar="DIR",
                       help=f"state root directory (else ${STATE_ROOT_ENV}, else spark.groupcoord.state.root)")
    group.add_argument("--conf", metavar="KEY=VALUE", action="append", default=[],
                       help="set a spark.groupcoord.* key (the prefix may be left out); repeatable")
    group.add_argument("--conf-file", metavar="FILE", help="a spark-defaults style file of spark.groupcoord.* keys")
    group.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    return parent


def config_from_args(args: argparse.Namespace, **flags: object) -> Config:
    """Resolve the configuration from the common options plus explicit ``flags`` (short key names)."""
    return resolve_config(conf_file=getattr(args, "conf_file", None), conf=getattr(args, "conf", []) or [],
                          flags={k.replace("_", "."): v for k, v in flags.items()})


def state_root_from_args(args: argparse.Namespace, *, required: bool = True) -> str | None:
    """``--state-root``, else ``$GROUPCOORD_STATE_ROOT``, else ``spark.groupcoord.state.root`` from the conf.

    Returned as given (not as a ``Path``, which would mangle a URI); ``StateRoot.open`` validates it.
    """
    explicit = getattr(args, "state_root", None) or os.environ.get(STATE_ROOT_ENV)
    if not explicit:
        explicit = config_from_args(args)["state.root"]
    if not explicit:
        if required:
            raise UsageError(f"no state root: pass --state-root DIR or set ${STATE_ROOT_ENV}")
        return None
    return str(explicit)


def storage_settings(args: argparse.Namespace) -> dict[str, object]:
    """The ``spark.groupcoord.storage.*`` values (endpoint, region, credential files) of a state root on S3."""
    return config_from_args(args).section("storage.")
