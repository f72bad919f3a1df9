"""Resolving configuration from its sources, in precedence order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from groupcoord.config.keys import SECURITY_SECRETS, STORAGE_SECRETS  # (importing keys fills the registry)
from groupcoord.config.registry import PREFIX, REGISTRY, ConfigError, full_name, short_name


class Config:
    """Resolved configuration: every registered key with its typed value. Read it with ``config[name]``."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = {key.name: key.default for key in REGISTRY}
        for name, value in values.items():
            self._values[REGISTRY.get(name).name] = value

    def __getitem__(self, name: str) -> Any:
        return self._values[REGISTRY.get(name).name]

    def get(self, name: str, default: Any = None) -> Any:
        """Return the value of ``name``, or ``default`` when it is unset (``None``)."""
        value = self[name]
        return default if value is None else value

    def section(self, prefix: str) -> dict[str, Any]:
        """The values of the keys whose short name starts with ``prefix`` (``"storage."``), by short name."""
        return {name: value for name, value in self._values.items() if name.startswith(prefix)}

    def as_dict(self) -> dict[str, Any]:
        """All values by short key name."""
        return dict(self._values)

    def with_values(self, **values: Any) -> Config:
        """A copy with some values replaced; keyword names use ``_`` for ``.`` (``group_max_size=5``)."""
        merged = dict(self._values)
        for name, raw in values.items():
            key = REGISTRY.get(name.replace("_", "."))
            merged[key.name] = key.parse(raw)
        return Config(merged)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if v != REGISTRY.get(k).default}
        return f"Config({changed!r})"


def parse_conf_file(path: str | Path) -> dict[str, str]:
    """Read a spark-defaults style file: ``key value`` or ``key=value`` lines, ``#`` comments.

    Only ``spark.groupcoord.*`` keys are returned; other Spark keys belong to Spark.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read conf file {file}: {exc.strerror or exc}") from None
    pairs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, value = _split_line(line)
        if not value and "=" not in line and " " not in line:
            raise ConfigError(f"{file}:{number}: expected 'key value', got {line!r}")
        if key.startswith(PREFIX):
            pairs[key] = value
    return pairs


def _split_line(line: str) -> tuple[str, str]:
    eq, space = line.find("="), _first_space(line)
    cut = min(i for i in (eq, space) if i >= 0) if max(eq, space) >= 0 else -1
    if cut < 0:
        return line, ""
    return line[:cut].strip(), line[cut + 1 :].strip().lstrip("=").strip()


def _first_space(line: str) -> int:
    for index, char in enumerate(line):
        if char.isspace():
            return index
    return -1


def parse_conf_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """Parse ``--conf KEY=VALUE`` arguments; a short key gets the ``spark.groupcoord.`` prefix."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--conf expects KEY=VALUE, got {pair!r}")
        key = key.strip()
        result[key if key.startswith("spark.") else PREFIX + key] = value.strip()
    return result


def resolve_config(
    *,
    conf_file: str | Path | None = None,
    spark_conf: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    conf: Iterable[str] = (),
    flags: Mapping[str, Any] | None = None,
) -> Config:
    """Merge the sources in precedence order and validate every value.

    ``spark_conf`` may be ``SparkConf.getAll()``; keys outside ``spark.groupcoord.`` are ignored there.
    ``flags`` maps short key names to explicit command-line values; ``None`` values are skipped.
    An unknown ``spark.groupcoord.*`` key raises :class:`ConfigError` naming the closest known key.
    """
    layers: list[Mapping[str, Any]] = []
    if conf_file is not None:
        layers.append(parse_conf_file(conf_file))
    if spark_conf is not None:
        items = spark_conf.items() if isinstance(spark_conf, Mapping) else spark_conf
        layers.append({k: v for k, v in items if k.startswith(PREFIX)})
    layers.append(parse_conf_pairs(conf))
    if flags:
        layers.append({k: v for k, v in flags.items() if v is not None})
    values: dict[str, Any] = {}
    for layer in layers:
        for name, raw in layer.items():
            _refuse_secret(name)
            key = REGISTRY.get(name)
            values[key.name] = key.parse(raw)
    _check_cross_key(values)
    return Config(values)


def _refuse_secret(name: str) -> None:
    """Secret values never come through configuration: Spark shows every conf value in its UI and event log."""
    short = short_name(name)
    if short in STORAGE_SECRETS or short in SECURITY_SECRETS:
        variable = SECURITY_SECRETS.get(short) or ("AWS_SECRET_ACCESS_KEY" if "secret" in name else "AWS_SESSION_TOKEN")
        raise ConfigError(f"{full_name(name)} is a secret and is refused as a configuration value (Spark shows "
                          f"those in its UI and logs): set {variable} in the environment or name a file with "
                          f"{full_name(name)}.file")


def _check_cross_key(values: Mapping[str, Any]) -> None:
    def value(name: str) -> Any:
        return values.get(name, REGISTRY.get(name).default)

    low, high = value("group.min.session.timeout.ms"), value("group.max.session.timeout.ms")
    if low > high:
        raise ConfigError(
            f"{PREFIX}group.min.session.timeout.ms ({low}) exceeds {PREFIX}group.max.session.timeout.ms ({high})"
        )
