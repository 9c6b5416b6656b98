"""A private Redis server for tests: one per test session (temp dir, free port, no persistence).

- `server()`: the session's running `RedisServer` (started on first use, stopped at interpreter exit);
  `pytest.skip` with the reason when Debian's `redis-server` is missing (scripts/install installs it when
  PLATFORM_TEST_REDIS=1 or PLATFORM_TEST_DATABASE=postgres asks for the multi-process suite).
- `RedisServer.url`: `redis://127.0.0.1:<port>/0`; `RedisServer.flush()` empties it between tests.
- `selected()`: True when PLATFORM_TEST_REDIS=1 asks the suite's servers to run with `redis_url` set.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass

import pytest

ENV_VAR = "PLATFORM_TEST_REDIS"


def selected() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RedisServer:
    root: str
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def flush(self) -> None:
        import redis

        with redis.Redis(port=self.port) as client:
            client.flushall()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.root, ignore_errors=True)


_server: RedisServer | None = None


def _start(binary: str) -> RedisServer:
    root = tempfile.mkdtemp(prefix="platform-redis-")
    port = _free_port()
    # No RDB snapshots, no AOF: a test server keeps nothing across runs.
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", root, "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    running = RedisServer(root, port, process)
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return running
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            running.stop()
            raise RuntimeError(f"redis-server did not start on port {port}")
        time.sleep(0.05)


def server() -> RedisServer:
    """The session's Redis (started once); skips the test when redis-server is not installed."""
    global _server
    if _server is None:
        binary = shutil.which("redis-server") or ("/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)
        if binary is None:
            pytest.skip("redis-server is not installed (Debian: apt-get install -y redis-server, or PLATFORM_TEST_REDIS=1 scripts/install)")
        _server = _start(binary)
        atexit.register(_server.stop)
    return _server


@pytest.fixture
def redis_url() -> str:
    """The session Redis's URL, emptied for this test (import this fixture into a test module)."""
    running = server()
    running.flush()
    return running.url
