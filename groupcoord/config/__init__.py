"""Configuration: one registry of every ``spark.groupcoord.*`` key, and its resolution.

Precedence, lowest first: code defaults < ``--conf-file`` < Spark conf < ``--conf KEY=VALUE`` < explicit flags.
"""

from __future__ import annotations

from groupcoord.config.registry import (
    PREFIX,
    REGISTRY,
    ConfigError,
    ConfigKey,
    full_name,
    short_name,
)
from groupcoord.config.resolve import Config, parse_conf_file, parse_conf_pairs, resolve_config

__all__ = [
    "PREFIX",
    "REGISTRY",
    "Config",
    "ConfigError",
    "ConfigKey",
    "full_name",
    "parse_conf_file",
    "parse_conf_pairs",
    "resolve_config",
    "short_name",
]
