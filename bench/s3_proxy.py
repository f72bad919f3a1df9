"""A TCP proxy in front of the S3 server that delays requests and loses responses on purpose.

- **Latency.** With ``delay_ms``, every request waits that long before it is forwarded: the per-request latency of
  S3 itself, which a server on loopback hides (for the benchmarks).
- **A lost response.** Armed with a key, it forwards the next ``PUT`` of that key to the server and then, instead
  of passing the server's answer back, closes the client's connection: the put happened, the client never heard.
  That is the "lost response" of a commit, for the tests of its recognition.

The proxy runs in a process of its own (:class:`ProxyProcess`; ``python -m bench.s3_proxy PORT [DELAY_MS]``):
delta-rs holds the GIL through some of its blocking requests, which would starve a proxy thread in the caller's own
process.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time


class S3Proxy:
    """Listens on 127.0.0.1 (:attr:`endpoint`) and forwards every connection to ``target_port``."""

    def __init__(self, target_port: int, *, delay_ms: float = 0.0) -> None:
        self.target_port = target_port
        self.delay_s = delay_ms / 1000
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._armed: bytes | None = None
        self._lock = threading.Lock()
        self.dropped: list[bytes] = []
        """The request lines whose responses were dropped."""
        self.requests = 0
        """How many requests went through."""
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self) -> str:
        """The proxy's URL, for ``AWS_ENDPOINT_URL``."""
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def drop_response_to_put_of(self, key: str) -> None:
        """Lose the response of the next ``PUT`` whose path ends with ``key``."""
        with self._lock:
            self._armed = key.encode()

    def close(self) -> None:
        """Stop accepting connections."""
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            dropping = threading.Event()
            threading.Thread(target=self._requests, args=(client, server, dropping), daemon=True).start()
            threading.Thread(target=self._responses, args=(server, client, dropping), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, dropping: threading.Event) -> None:
        try:
            while data := client.recv(65536):
                line = data.split(b"\r\n", 1)[0]
                if line.endswith(b" HTTP/1.1"):  # a new request, not more of a body
                    with self._lock:
                        self.requests += 1
                    if self.delay_s:
                        time.sleep(self.delay_s)  # S3's latency
                with self._lock:
                    if self._armed and line.startswith(b"PUT ") and self._armed in line.split(b" ")[1]:
                        self._armed = None
                        self.dropped.append(line)
                        dropping.set()
                server.sendall(data)
        except OSError:
            pass
        finally:
            server.close()

    @staticmethod
    def _responses(server: socket.socket, client: socket.socket, dropping: threading.Event) -> None:
        try:
            while data := server.recv(65536):
                if dropping.is_set():
                    break  # the server answered the put: the client never hears it
                client.sendall(data)
        except OSError:
            pass
        finally:
            for end in (client, server):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()


class ProxyProcess:
    """An :class:`S3Proxy` in a child process, driven over its stdin and stdout."""

    def __init__(self, target_port: int, *, delay_ms: float = 0.0) -> None:
        self._process = subprocess.Popen([sys.executable, "-m", "bench.s3_proxy", str(target_port), str(delay_ms)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.endpoint = self._ask("")

    def drop_response_to_put_of(self, key: str) -> None:
        """Lose the response of the next ``PUT`` whose path ends with ``key``."""
        self._ask(f"drop {key}")

    def dropped(self) -> int:
        """How many responses the proxy lost so far."""
        return int(self._ask("dropped"))

    def requests(self) -> int:
        """How many requests went through the proxy so far."""
        return int(self._ask("requests"))

    def close(self) -> None:
        """Stop the proxy process."""
        self._process.kill()
        self._process.wait(10)

    def _ask(self, command: str) -> str:
        assert self._process.stdin is not None and self._process.stdout is not None
        if command:
            self._process.stdin.write(command + "\n")
            self._process.stdin.flush()
        return self._process.stdout.readline().strip()


def main() -> None:
    """Serve a proxy to the port in ``argv[1]`` (delaying each request by ``argv[2]`` ms): print its endpoint, then
    answer ``drop KEY`` and ``dropped`` on stdin."""
    proxy = S3Proxy(int(sys.argv[1]), delay_ms=float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
    print(proxy.endpoint, flush=True)
    for line in sys.stdin:
        command, _, key = line.strip().partition(" ")
        if command == "drop":
            proxy.drop_response_to_put_of(key)
            print("armed", flush=True)
        elif command == "dropped":
            print(len(proxy.dropped), flush=True)
        elif command == "requests":
            print(proxy.requests, flush=True)


if __name__ == "__main__":
    main()
