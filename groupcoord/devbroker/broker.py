"""Start, probe and stop one single-node Apache Kafka broker (KRaft) from the jars that ``make install`` fetched."""

from __future__ import annotations

import base64
import ctypes
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from groupcoord.config.jars import kafka_classpath
from groupcoord.devbroker.class_archive import ClassArchive, class_archive
from groupcoord.devbroker.settings import NODE_ID, BrokerLayout, log4j2_config, server_properties
from groupcoord.devbroker.topics import Record, create_topic, produce

log = logging.getLogger("groupcoord.devbroker")

JVM_OPTIONS: tuple[str, ...] = ("-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
"""A small heap, and the serial collector (one GC thread: the machine's cores belong to the tests); see the README."""

PEER_JVM_OPTIONS: tuple[str, ...] = (
    "-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true")
"""The JVM as Kafka's own ``kafka-server-start.sh`` starts a broker (its ``KAFKA_HEAP_OPTS`` and
``kafka-run-class.sh``'s ``KAFKA_JVM_PERFORMANCE_OPTS``): the benchmarks' peer runs at Kafka's defaults."""

TOOL_JVM_OPTIONS: tuple[str, ...] = ("-XX:TieredStopAtLevel=1",)
"""Added for the short-lived StorageTool: a JVM that exits within seconds gains nothing from the C2 compiler."""

TEST_JVM_OPTIONS: tuple[str, ...] = (*JVM_OPTIONS, *TOOL_JVM_OPTIONS)
"""For a test session's broker: no C2 compiler, so it starts faster and leaves the cores to the tests (slower under
load: never for benchmarks, where Kafka's speed is the yardstick)."""

READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
_PROBE_TIMEOUT_MS = 5000
_WILDCARDS = ("0.0.0.0", "::", "")
# broker.log lines (see settings.log4j2_config): "[timestamp] LEVEL message (logger)", then a stack trace, if any.
_LOG_LINE = re.compile(r"\[[^]]+\] [A-Z]+ ")
_LOGGED_ERROR = re.compile(r"\[[^]]+\] (?:ERROR|FATAL) (.*?)(?: \([\w.$]+\))?$")
_BIND_FAILURE = re.compile(r"failed to bind to \S+:(\d+): Address already in use")
_BIND_ATTEMPTS = 3
_EXCEPTION = re.compile(r"(?:Caused by: )?[\w.$]+(?:Exception|Error): (.+)$")

PropertyValue = str | int | bool


class BrokerError(RuntimeError):
    """The broker could not be formatted, did not start, or died before it was ready."""


class PortTakenError(BrokerError):
    """The broker died before it was ready because one of its ports was in use."""

    def __init__(self, message: str, port: int) -> None:
        super().__init__(message)
        self.port = port


def parse_listen(value: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6); raise :class:`ValueError` naming what is wrong.

    A wildcard host is refused: the broker advertises the address it binds, and clients cannot connect to 0.0.0.0.
    """
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    if host in _WILDCARDS:
        raise ValueError(f"cannot listen on {host or 'every address'}: the dev broker binds one address, "
                         f"e.g. 127.0.0.1:{port}")
    return host, int(port)


def free_port(host: str) -> int:
    """A port on ``host`` that nobody listens on right now (the broker binds it a moment later)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def java_executable() -> str:
    """``$JAVA_HOME/bin/java``, else ``java`` on the ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not Path(candidate).is_file():
        raise BrokerError("java not found: put Java 17 on the PATH or set JAVA_HOME")
    return candidate


class KafkaBroker:
    """A running dev broker: a ``kafka.Kafka`` JVM serving PLAINTEXT clients on ``bootstrap``.

    Start it with :meth:`start`, which returns once a Kafka Metadata request is answered; stop it with :meth:`stop`
    or by leaving the ``with`` block. For local development and tests only (no security, one replica).

    >>> with KafkaBroker.start("var/kafka") as broker:          # doctest: +SKIP
    ...     broker.create_topic("orders", partitions=12)
    ...     broker.produce("orders", [Record(b"hello", key=b"k1")])
    """

    def __init__(self, layout: BrokerLayout, host: str, port: int, process: subprocess.Popen[bytes],
                 archive: ClassArchive | None = None) -> None:
        self.layout = layout
        self.host = host
        self.port = port
        self.process = process
        self._archive = archive

    @property
    def bootstrap(self) -> str:
        """``HOST:PORT`` for a client's ``bootstrap_servers``."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def log_dir(self) -> Path:
        """The directory holding the broker's data, configuration and logs."""
        return self.layout.log_dir

    @classmethod
    def start(cls, log_dir: str | Path, *, listen: str = "127.0.0.1:0",
              properties: Mapping[str, PropertyValue] | None = None, jvm_options: Sequence[str] = JVM_OPTIONS,
              output: IO[str] | IO[bytes] | None = None, ready_timeout_s: float = READY_TIMEOUT_S,
              share_classes: bool = True, extra_listeners: Sequence[str] = ()) -> KafkaBroker:
        """Format ``log_dir`` if it is new, start the broker on ``listen`` and wait until it answers Metadata.

        ``listen`` is ``HOST:PORT``; port 0 picks a free port (and another one if it is taken before the JVM binds it;
        the controller's port is always picked so). ``properties`` override the broker's settings
        (``server.properties`` keys). The JVM's stdout and stderr go to ``output``, else to ``log_dir/broker.out``;
        the broker's full log is ``log_dir/broker.log``. ``share_classes`` maps (or, the first time, makes) the
        class-data-sharing archive of :mod:`~groupcoord.devbroker.class_archive`. On Linux the JVM is told to exit when
        the thread that started it dies, so a killed test run leaves no broker behind. ``extra_listeners`` are
        more client listeners (``SASL_SSL://localhost:9094``), configured by ``properties`` (the PLAINTEXT one stays,
        for readiness and the tools).
        """
        host, port = parse_listen(listen)
        layout = BrokerLayout(Path(log_dir).resolve())
        layout.log_dir.mkdir(parents=True, exist_ok=True)
        overrides = {key: _property_text(value) for key, value in (properties or {}).items()}
        layout.log4j2_config.write_text(log4j2_config(layout))
        java = java_executable()
        archive = class_archive(java) if share_classes else None
        jvm = [java, *jvm_options, f"-Dlog4j2.configurationFile={layout.log4j2_config}", "-cp", kafka_classpath()]
        attempt = 1
        while True:
            chosen = port or free_port(host)
            layout.server_properties.write_text(
                server_properties(layout, host=host, port=chosen, controller_port=free_port("127.0.0.1"),
                                  overrides=overrides, extra_listeners=extra_listeners))
            if not layout.formatted:
                _format_storage([*jvm, *TOOL_JVM_OPTIONS, *(archive.tool_options() if archive else [])], layout)
            try:
                return cls._launch(layout, host, chosen, jvm, archive, output, ready_timeout_s)
            except PortTakenError as exc:
                # A port picked free was taken before the JVM bound it (another process on a busy machine).
                if attempt == _BIND_ATTEMPTS or (port and exc.port == port):
                    raise
                log.warning("%s; starting again on other ports", exc)
                attempt += 1

    @classmethod
    def _launch(cls, layout: BrokerLayout, host: str, port: int, jvm: list[str], archive: ClassArchive | None,
                output: IO[str] | IO[bytes] | None, ready_timeout_s: float) -> KafkaBroker:
        started = time.monotonic()
        log_start = layout.broker_log.stat().st_size if layout.broker_log.exists() else 0
        command = [*jvm, *(archive.broker_options() if archive else []), "kafka.Kafka", str(layout.server_properties)]
        with _output_stream(layout, output) as stream:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stream, stderr=subprocess.STDOUT,
                                       preexec_fn=_die_with_parent())
        broker = cls(layout, host, port, process, archive)
        try:
            broker._wait_until_ready(ready_timeout_s, log_start)
        except BaseException:
            broker.stop()
            raise
        log.info("kafka broker %s ready in %.1f s (pid %d, log %s)", broker.bootstrap, time.monotonic() - started,
                 process.pid, layout.broker_log)
        return broker

    def poll(self) -> int | None:
        """The JVM's exit code, or None while it runs."""
        return self.process.poll()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM the broker (a controlled shutdown) and wait; SIGKILL it after ``timeout_s``. Returns the code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("kafka broker %s did not stop within %.0f s: killing it", self.bootstrap, timeout_s)
                self.process.kill()
                self.process.wait()
        if self._archive is not None:
            self._archive.publish()
        return self.process.returncode

    def create_topic(self, name: str, partitions: int = 1, *, configs: Mapping[str, str] | None = None) -> None:
        """Create ``name`` with ``partitions`` partitions and wait until every partition has a leader."""
        create_topic(self.bootstrap, name, partitions, configs=configs)

    def produce(self, topic: str, records: Iterable[Record]) -> dict[int, range]:
        """Produce ``records`` (any iterable: a generator for millions) and wait for every acknowledgement.

        Returns each written partition's ``range`` of offsets; see :func:`groupcoord.devbroker.topics.produce`.
        """
        return produce(self.bootstrap, topic, records)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def _wait_until_ready(self, timeout_s: float, log_start: int) -> None:
        deadline = time.monotonic() + timeout_s
        while not self._accepts_connections() or not self._answers_metadata():
            code = self.process.poll()
            if code is not None:
                cause = first_error(self.layout.broker_log, log_start)
                message = (f"the kafka broker exited with code {code} before it was ready"
                           f"{': ' + cause if cause else ''} (see {self.layout.broker_log})")
                taken = _BIND_FAILURE.search(cause or "")
                raise PortTakenError(message, int(taken.group(1))) if taken else BrokerError(message)
            if time.monotonic() > deadline:
                raise BrokerError(f"the kafka broker did not answer on {self.bootstrap} within {timeout_s:.0f} s "
                                  f"(see {self.layout.broker_log})")
            time.sleep(0.05)

    def _accepts_connections(self) -> bool:
        # A cheap first gate: a Kafka client's bootstrap backs off for seconds after a refused connection.
        try:
            socket.create_connection((self.host, self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def _answers_metadata(self) -> bool:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="groupcoord-dev-broker-probe",
                                     request_timeout_ms=_PROBE_TIMEOUT_MS, bootstrap_timeout_ms=_PROBE_TIMEOUT_MS)
        except KafkaError:
            return False
        try:
            cluster = admin.describe_cluster()  # ApiVersions, then Metadata: the broker is registered and serving
        except KafkaError:
            return False
        finally:
            admin.close()
        return any(broker["broker_id"] == NODE_ID for broker in cluster["brokers"])


def first_error(broker_log: Path, since: int = 0) -> str | None:
    """The message of the first ERROR in the broker's log from byte ``since`` on: the exception logged with it if any
    (a failed bind says which address), else the ERROR line itself; None when there is none."""
    try:
        with broker_log.open("rb") as log_file:
            log_file.seek(since)
            lines = log_file.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    for index, line in enumerate(lines):
        logged = _LOGGED_ERROR.match(line)
        if logged is None:
            continue
        for following in lines[index + 1:]:
            if _LOG_LINE.match(following):
                break
            exception = _EXCEPTION.match(following)
            if exception:
                return exception.group(1)
        return logged.group(1)
    return None


def new_cluster_id() -> str:
    """A random KRaft cluster id: 16 random bytes in URL-safe base64, never starting with ``-`` (an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _format_storage(java: list[str], layout: BrokerLayout) -> None:
    command = [*java, "kafka.tools.StorageTool", "format", "--cluster-id", new_cluster_id(),
               "--config", str(layout.server_properties)]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        raise BrokerError(f"formatting {layout.data_dir} failed: {lines[-1] if lines else done.returncode}")
    log.info("formatted %s", layout.data_dir)


@contextmanager
def _output_stream(layout: BrokerLayout, output: IO[str] | IO[bytes] | None) -> Iterator[IO[str] | IO[bytes]]:
    """The caller's stream, else ``broker.out`` opened for appending (closed here once the JVM holds it)."""
    if output is not None:
        yield output
        return
    with layout.console_output.open("ab") as owned:
        yield owned


def _die_with_parent() -> Callable[[], None] | None:
    """On Linux, a ``preexec_fn`` asking the kernel to SIGTERM the child when its parent thread dies."""
    if not sys.platform.startswith("linux"):
        return None

    def set_parent_death_signal() -> None:
        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)

    return set_parent_death_signal


def _property_text(value: PropertyValue) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
