"""What the dev broker writes under its log directory: the layout, ``server.properties`` and the Log4j 2 config.

The broker is a combined KRaft broker and controller (node 1) with static voters. Group and offset settings keep
Kafka's defaults, because this broker is the oracle of Kafka's behaviour; only the replication settings are lowered
to fit a single node, and topics are never created implicitly (a test that needs a topic creates it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

NODE_ID = 1

SINGLE_NODE_PROPERTIES: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # A typo in a topic name must fail, not create a topic with one partition.
    "auto.create.topics.enable": "false",
}
"""Settings a one-node cluster needs (every internal topic with one replica), plus no implicit topic creation."""


@dataclass(frozen=True)
class BrokerLayout:
    """The files of one dev broker, all under its log directory."""

    log_dir: Path

    @property
    def data_dir(self) -> Path:
        """Kafka's ``log.dirs``: the partitions and the KRaft metadata log."""
        return self.log_dir / "data"

    @property
    def server_properties(self) -> Path:
        """The broker's configuration, rewritten at every start (the ports may change)."""
        return self.log_dir / "server.properties"

    @property
    def log4j2_config(self) -> Path:
        """The Log4j 2 configuration the JVM is started with."""
        return self.log_dir / "log4j2.properties"

    @property
    def broker_log(self) -> Path:
        """The broker's own log (INFO and above)."""
        return self.log_dir / "broker.log"

    @property
    def console_output(self) -> Path:
        """The JVM's stdout and stderr when the caller does not take them (WARN and above, JVM errors)."""
        return self.log_dir / "broker.out"

    @property
    def formatted(self) -> bool:
        """True once ``StorageTool format`` has written the data directory's ``meta.properties``."""
        return (self.data_dir / "meta.properties").is_file()


def server_properties(layout: BrokerLayout, *, host: str, port: int, controller_port: int,
                      overrides: Mapping[str, str], extra_listeners: Sequence[str] = ()) -> str:
    """The text of ``server.properties``: clients on ``host:port``, the controller on 127.0.0.1, each of
    ``extra_listeners`` (``SASL_SSL://localhost:9094``: the listener is named after its security protocol), then
    ``overrides``."""
    client_host = f"[{host}]" if ":" in host else host
    extra = "".join(f",{listener}" for listener in extra_listeners)
    protocols = "".join(f",{listener.split(':', 1)[0]}:{listener.split(':', 1)[0]}" for listener in extra_listeners)
    settings = {
        "process.roles": "broker,controller",
        "node.id": str(NODE_ID),
        "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://{client_host}:{port},CONTROLLER://127.0.0.1:{controller_port}{extra}",
        "advertised.listeners": f"PLAINTEXT://{client_host}:{port}{extra}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{protocols}",
        "log.dirs": str(layout.data_dir),
        **SINGLE_NODE_PROPERTIES,
        **overrides,
    }
    return "".join(f"{key}={_escape(value)}\n" for key, value in settings.items())


def log4j2_config(layout: BrokerLayout) -> str:
    """Log4j 2 properties: everything from INFO to ``broker.log``, WARN and above also to the console (stderr)."""
    pattern = "[%d] %p %m (%c)%n"
    return "\n".join([
        "status = warn",
        # Every line is flushed as written, so Log4j's own shutdown hook has nothing to do (it only warned).
        "shutdownHook = disable",
        "appender.file.type = File",
        "appender.file.name = FILE",
        f"appender.file.fileName = {_escape(str(layout.broker_log))}",
        "appender.file.layout.type = PatternLayout",
        f"appender.file.layout.pattern = {pattern}",
        "appender.console.type = Console",
        "appender.console.name = CONSOLE",
        "appender.console.target = SYSTEM_ERR",
        "appender.console.layout.type = PatternLayout",
        f"appender.console.layout.pattern = {pattern}",
        "appender.console.filter.threshold.type = ThresholdFilter",
        "appender.console.filter.threshold.level = warn",
        "rootLogger.level = info",
        "rootLogger.appenderRef.file.ref = FILE",
        "rootLogger.appenderRef.console.ref = CONSOLE",
        "",
    ])


def _escape(value: str) -> str:
    # Java properties treat a backslash as an escape (Windows paths, regexes in overrides).
    return value.replace("\\", "\\\\")
