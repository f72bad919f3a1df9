"""A coordinator running in a background thread of this process: for Spark drivers, tools and tests.

:class:`BackgroundCoordinator` runs the same :class:`~groupcoord.host.CoordinatorHost` cycle as ``groupcoord serve``
(standby -> lease -> load -> serve -> step down) on its own asyncio loop in a daemon thread::

    runner = spark_assignment_runner(root, spark=spark)                     # groupcoord.assignment.runner
    with BackgroundCoordinator(root, config, assignment_runner=runner) as coordinator:  # start(30.0) on enter
        print(coordinator.address)                                          # "127.0.0.1:40123"
        ...                                                                 # members / tools talk to it
    # stop(): pending requests get NOT_COORDINATOR, queued writes drain, the lease is released

Interface (others build on it; keep it stable):

- ``BackgroundCoordinator(root, config, *, assignment_runner=None, target_assignment_runner=None, listen=None,
  holder_id=None)``:
  ``root`` is a :class:`~groupcoord.state_root.StateRoot` (a path is opened, and created if missing); ``config``
  the resolved :class:`~groupcoord.config.Config`. ``server-*`` groups are assigned by ``assignment_runner``
  (a Spark driver passes :func:`groupcoord.assignment.runner.spark_assignment_runner`; the host never imports
  Spark). Without one, ``server-*`` protocols are refused with INCONSISTENT_GROUP_PROTOCOL, like
  ``serve --no-spark``. Consumer groups (KIP-848) are assigned by ``target_assignment_runner`` (the same runner's
  ``targets``); without one ConsumerGroupHeartbeat is not served. ``listen`` (``HOST:PORT``, port 0 for a free
  one) overrides ``config["listen"]``.
- ``start(timeout_s=30.0) -> str``: waits until this process holds the lease and serves; returns ``"HOST:PORT"``
  (the advertised address). Raises :class:`CoordinatorStartError` (after stopping again) when the lease cannot be
  taken in time (another live holder) or the host fails while starting.
- ``start_or_stand_by(timeout_s=30.0) -> str | None``: as ``start``, but when another live process holds the lease
  it returns ``None`` and keeps standing by (it takes the lease over when the holder's lease expires), as ``serve``
  does.
- ``address``: ``"HOST:PORT"`` while serving, else ``None``. ``serving``: True while this process is the holder.
- ``stop(timeout_s=15.0)``: steps down (NOT_COORDINATOR to pending requests, drain, release the lease) and joins
  the thread. Idempotent. ``__enter__`` starts, ``__exit__`` stops.

If the lease is lost while running (storage trouble, a forced takeover) the host steps down and stands by again, as
``serve`` does; ``address`` is ``None`` meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from pathlib import Path
from types import TracebackType

from groupcoord.config import Config
from groupcoord.host.coordinator_host import CoordinatorHost, HostConfig, run_until_stopped
from groupcoord.runtime import AssignmentRunner, TargetAssignmentRunner
from groupcoord.server.api import BrokerAddress
from groupcoord.state_root import StateRoot

log = logging.getLogger("groupcoord.host.background")

STOP_DEADLINE_S = 10.0
"""How long a stopping host may take to drain its writes and release the lease before it is cancelled."""


class CoordinatorStartError(RuntimeError):
    """The background coordinator could not start serving; the message says why in one line."""


class BackgroundCoordinator:
    """The coordinator of one state root, served from a daemon thread (see the module docstring)."""

    def __init__(
        self,
        root: StateRoot | str | Path,
        config: Config,
        *,
        assignment_runner: AssignmentRunner | None = None,
        target_assignment_runner: TargetAssignmentRunner | None = None,
        listen: str | None = None,
        holder_id: str | None = None,
    ) -> None:
        self.root = root if isinstance(root, StateRoot) else StateRoot.open(root, create=True)
        if listen is not None:
            config = config.with_values(listen=listen)
        self.host_config = HostConfig.from_config(config, holder_id=holder_id)
        self.host = CoordinatorHost(self.root, self.host_config, assignment_runner=assignment_runner,
                                    target_assignment_runner=target_assignment_runner,
                                    on_ready=self._on_ready, on_standby=self._on_standby)
        self._ready = threading.Event()
        self._standing_by = threading.Event()
        self._lock = threading.Lock()
        self._address: str | None = None
        self._standby_holder: str | None = None
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    # --- what callers read ----------------------------------------------------------------------------------------

    @property
    def address(self) -> str | None:
        """``HOST:PORT`` members and tools connect to while this process serves, else ``None``."""
        with self._lock:
            return self._address if self.host.serving.is_set() else None

    @property
    def serving(self) -> bool:
        """True while this process holds the lease and answers group APIs."""
        return self.address is not None

    # --- life cycle -----------------------------------------------------------------------------------------------

    def start(self, timeout_s: float = 30.0) -> str:
        """Start the thread and wait until this process serves; return the advertised ``HOST:PORT``."""
        self._start_thread()
        self._ready.wait(timeout_s)
        address = self.address
        if address is not None and self._failure is None:
            return address
        failure, holder = self._failure, self._standby_holder
        self.stop()
        if failure is not None:
            raise CoordinatorStartError(
                f"the coordinator of {self.root.location} failed while starting: {failure}") from failure
        held = f"the lease is held by {holder}" if holder else "it did not finish loading"
        raise CoordinatorStartError(
            f"could not become the coordinator of {self.root.location} within {timeout_s:g} s: {held}")

    def start_or_stand_by(self, timeout_s: float = 30.0) -> str | None:
        """Start the thread; return the address once this process serves, or ``None`` once it stands by behind
        another live holder (the thread keeps standing by, and serves when it takes the lease over)."""
        self._start_thread()
        deadline = time.monotonic() + timeout_s
        while not self._ready.is_set() and not self._standing_by.is_set() and time.monotonic() < deadline:
            self._ready.wait(0.05)
        if self._failure is not None:
            failure = self._failure
            self.stop()
            raise CoordinatorStartError(
                f"the coordinator of {self.root.location} failed while starting: {failure}") from failure
        address = self.address
        if address is None and not self._standing_by.is_set():
            self.stop()
            raise CoordinatorStartError(
                f"could not become the coordinator of {self.root.location} within {timeout_s:g} s: "
                "it did not finish loading")
        return address

    def stop(self, timeout_s: float = STOP_DEADLINE_S + 5.0) -> None:
        """Step down (NOT_COORDINATOR, drain, release the lease) and join the thread. Safe to call twice."""
        thread = self._thread
        if thread is None:
            return
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            # The loop may close between the check and the call: the thread is ending anyway.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout_s)
        if thread.is_alive():
            log.warning("the background coordinator of %s did not stop within %.1f s", self.root.location, timeout_s)
        with self._lock:
            self._address = None

    def __enter__(self) -> BackgroundCoordinator:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # --- the thread -----------------------------------------------------------------------------------------------

    def _start_thread(self) -> None:
        if self._thread is not None:
            raise CoordinatorStartError("this BackgroundCoordinator was already started")
        loop_ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(loop_ready,), daemon=True,
                                        name=f"groupcoord-coordinator-{self.root.location.name}")
        self._thread.start()
        loop_ready.wait()

    def _run(self, loop_ready: threading.Event) -> None:
        async def main() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            loop_ready.set()
            await run_until_stopped(self.host, self._stop, deadline_s=STOP_DEADLINE_S)

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported to start(); the thread must not die silently
            log.exception("the background coordinator of %s failed", self.root.location)
            self._failure = exc
        finally:
            loop_ready.set()
            self._ready.set()  # wake a waiting start(): it sees the failure (or a stop)

    def _on_ready(self, bound: BrokerAddress) -> None:
        with self._lock:
            self._address = self.host_config.advertised
        log.info("background coordinator of %s serving at %s (bound %s:%d)", self.root.location, self._address,
                 bound.host, bound.port)
        self._ready.set()

    def _on_standby(self, holder: str) -> None:
        self._standby_holder = holder
        self._standing_by.set()
