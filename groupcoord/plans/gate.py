"""Whether this process may use Spark's JVM internals, and the switch to the public API when it may not.

The internals are private classes and methods of Spark's JVM side, reached through py4j. They are used only on the
Spark versions they were checked against (:data:`VERIFIED_SPARK_VERSIONS`), on a classic session (Spark Connect has
no JVM in the Python process), and unless :data:`INTERNALS_ENV` says otherwise. A call that still finds them
different (a method or constructor this Spark lacks) turns that one feature off for the process, logs a warning once,
and answers through the public API: a Spark upgrade costs speed, never correctness.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError  # type: ignore[import-untyped]

log = logging.getLogger("groupcoord.plans")

INTERNALS_ENV = "GROUPCOORD_SPARK_PLAN_INTERNALS"
"""``auto`` (the default): internals on a verified Spark version; ``off``: the public API only; ``on``: internals on
any Spark version too (an unverified one uses the newest verified layout, feature by feature falling back)."""

_MODES = ("auto", "off", "on")


@dataclass(frozen=True)
class Layout:
    """What differs in the internals between the verified Spark versions."""

    logical_rdd_checkpoint_flag: bool
    """``LogicalRDD``'s constructor ends with ``isCheckpointedInput`` (Spark 4.3; 4.2 has no such argument)."""


VERIFIED_SPARK_VERSIONS: dict[str, Layout] = {
    "4.2": Layout(logical_rdd_checkpoint_flag=False),
    "4.3": Layout(logical_rdd_checkpoint_flag=True),
}
"""The Spark ``major.minor`` versions whose internals this package was checked against, and their layout."""


class Internals:
    """One JVM's internals: its Spark version, layout and the JVM classes the features use.

    The classes are looked up once: each step of a ``jvm.org.apache...`` path is a py4j round trip (seven for one
    class name), and the assignors cut a dozen leaves per call.
    """

    def __init__(self, jvm: Any, version: str, layout: Layout) -> None:
        self.jvm = jvm
        self.version = version
        self.layout = layout
        self.array_list = jvm.java.util.ArrayList
        self.converters = jvm.scala.jdk.javaapi.CollectionConverters
        physical = jvm.org.apache.spark.sql.catalyst.plans.physical
        self.hash_partitioning = physical.HashPartitioning
        self.single_partition = getattr(physical, "SinglePartition$").__getattr__("MODULE$")
        self.logical_rdd = jvm.org.apache.spark.sql.execution.LogicalRDD
        self.dataset = jvm.org.apache.spark.sql.classic.Dataset
        self.none = jvm.scala.Option.empty()
        self.some = jvm.scala.Some


@dataclass
class _Probe:
    """What was found for one py4j gateway (``jvm`` is kept so that its ``id`` is not reused while cached)."""

    jvm: Any
    internals: Internals | None
    verified: bool
    failed: set[str] = field(default_factory=set)


_PROBES: dict[int, _Probe] = {}
_LOCK = threading.Lock()
_T = TypeVar("_T")


def mode() -> str:
    """The :data:`INTERNALS_ENV` setting (``auto`` when unset or unknown)."""
    value = os.environ.get(INTERNALS_ENV, "auto").strip().lower()
    return value if value in _MODES else "auto"


def _probe(owner: Any) -> _Probe | None:
    """The probe of ``owner``'s gateway (a classic SparkSession or SparkContext), made once; None without a JVM."""
    jvm = getattr(owner, "_jvm", None)
    if jvm is None:  # Spark Connect (its session raises on ``_jvm``), or a stopped context
        return None
    probe = _PROBES.get(id(jvm))
    if probe is not None and probe.jvm is jvm:
        return probe
    with _LOCK:
        version = str(owner.version)
        layout = VERIFIED_SPARK_VERSIONS.get(".".join(version.split(".")[:2]))
        if layout is None:
            log.warning("Spark %s is not among the versions whose internals groupcoord checked (%s): plans use the "
                        "public API unless %s=on", version, ", ".join(VERIFIED_SPARK_VERSIONS), INTERNALS_ENV)
        try:
            internals: Internals | None = Internals(jvm, version, layout or _newest_layout())
        except (Py4JJavaError, Py4JNetworkError):
            raise
        except Py4JError as exc:
            log.warning("Spark %s: its internals differ (%s); plans use the public API", version, _first_line(exc))
            internals = None
        probe = _Probe(jvm, internals, verified=layout is not None)
        _PROBES[id(jvm)] = probe
        return probe


def _newest_layout() -> Layout:
    return VERIFIED_SPARK_VERSIONS[max(VERIFIED_SPARK_VERSIONS, key=lambda v: tuple(map(int, v.split("."))))]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _usable(owner: Any) -> _Probe | None:
    """``owner``'s probe when its internals may be used now (see :func:`mode`), else None."""
    setting = mode()
    if setting == "off":
        return None
    probe = _probe(owner)
    if probe is None or probe.internals is None or (not probe.verified and setting != "on"):
        return None
    return probe


def internals_of(owner: Any) -> Internals | None:
    """``owner``'s internals (a classic SparkSession or SparkContext), or None when the public API must be used."""
    probe = _usable(owner)
    return None if probe is None else probe.internals


def through_internals(feature: str, owner: Any, internal: Callable[[Internals], _T],
                      fallback: Callable[[], _T]) -> _T:
    """``internal(internals)`` when ``owner`` may use the internals and ``feature`` has not failed before, else
    ``fallback()``.

    A py4j reflection error (a class, method or constructor this Spark lacks or declares differently) or a missing
    Python attribute turns ``feature`` off for ``owner``'s JVM, logged once, and answers with ``fallback()``. Errors
    raised by Spark itself (``Py4JJavaError``) and a lost gateway propagate: the public API would meet them too.
    """
    probe = _usable(owner)
    if probe is None or probe.internals is None or feature in probe.failed:
        return fallback()
    try:
        return internal(probe.internals)
    except (Py4JJavaError, Py4JNetworkError):
        raise
    except (Py4JError, AttributeError) as exc:
        probe.failed.add(feature)
        log.warning("Spark %s: the internals behind %s differ (%s); using the public API from now on",
                    probe.internals.version, feature, _first_line(exc))
        return fallback()


def failed_features(owner: Any) -> frozenset[str]:
    """The features whose internals failed on ``owner``'s JVM and now use the public API (empty without a JVM)."""
    probe = _probe(owner)
    return frozenset() if probe is None else frozenset(probe.failed)
