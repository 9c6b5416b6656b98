"""The server as a separate process (for crash and restart tests)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.helpers.eventually import eventually
from tests.helpers.server import free_port

ADMIN = ("admin", "admin-pass-123")


@dataclass
class ServerProcess:
    data_dir: str
    port: int = field(default_factory=free_port)
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, timeout: float = 20.0) -> None:
        """Start the server; when its free port was taken meanwhile by another process, retry on a new one."""
        for attempt in range(3):
            try:
                await self._start(timeout)
                return
            except RuntimeError as exc:
                if "Address already in use" not in str(exc) or attempt == 2:
                    raise
                self.port = free_port()

    async def _start(self, timeout: float) -> None:
        env = {**os.environ, "PLATFORM_ADMIN_USERNAME": ADMIN[0], "PLATFORM_ADMIN_PASSWORD": ADMIN[1],
               "PLATFORM_PASSWORD_HASH_ROUNDS": "4", "PLATFORM_LOG_LEVEL": "WARNING", **self.env}
        log = self._log()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "platform_server", "--host", "127.0.0.1", "--port", str(self.port),
             "--data-dir", self.data_dir],
            env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
        )
        log.close()  # the child keeps its own descriptor
        async with aiohttp.ClientSession() as s:

            async def serving() -> bool:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError("server exited: " + self.log_tail())
                try:
                    async with s.get(self.url + "/api/v1/setup/status") as r:
                        return r.status == 200
                except aiohttp.ClientError:
                    return False

            await eventually(serving, timeout=timeout, interval=0.05, what="the server answering")

    def _log(self) -> Any:
        """The server's stderr goes to a file beside its data dir (a pipe nobody reads would block it)."""
        os.makedirs(self.data_dir, exist_ok=True)
        return open(os.path.join(os.path.dirname(os.path.abspath(self.data_dir)), f"server-{self.port}.log"), "ab")

    def log_text(self) -> str:
        """Everything the server (and, under `--workers`, its supervisor and workers) wrote to stderr."""
        path = os.path.join(os.path.dirname(os.path.abspath(self.data_dir)), f"server-{self.port}.log")
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")

    def log_tail(self) -> str:
        return self.log_text()[-2000:]

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
