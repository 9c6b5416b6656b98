"""Processes the bench starts: the platform server, the bare Tornado baseline and the scripted model."""
from __future__ import annotations

import asyncio
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

import aiohttp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADMIN = ("admin", "bench-admin-pass-1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raise_nofile(want: int = 65536) -> int:
    """Raise this process's open-files soft limit (children inherit it); returns the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (VmRSS)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Proc:
    """A child process listening on 127.0.0.1:port, logging to a file."""

    name: str
    argv: list[str]
    port: int
    log_path: str
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    profiled: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def spawn(self, profile_to: str | None = None) -> None:
        env = dict(os.environ, PYTHONPATH=ROOT, **self.env)
        argv = list(self.argv)
        self.profiled = bool(profile_to)
        if profile_to:
            argv = [os.path.join(os.path.dirname(sys.executable), "py-spy"), "record", "--nonblocking", "--format", "raw",
                    "--rate", os.environ.get("PYSPY_RATE", "200"), "-o", profile_to, "--"] + argv
        self.started_at = time.perf_counter()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()

    async def wait_ready(self, path: str, headers: dict[str, str] | None = None, timeout: float = 30.0) -> float:
        """Poll path until it answers 200; returns seconds since spawn."""
        deadline = time.perf_counter() + timeout
        async with aiohttp.ClientSession() as s:
            while True:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited; see {self.log_path}")
                try:
                    async with s.get(self.url + path, headers=headers or {}) as r:
                        if r.status == 200:
                            return time.perf_counter() - self.started_at
                except aiohttp.ClientError:
                    pass
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"{self.name} not ready; see {self.log_path}")
                await asyncio.sleep(0.005)

    def server_pid(self) -> int:
        """The Python server process itself (py-spy's child when profiling)."""
        if not self.profiled:
            return self.pid
        for _ in range(200):
            try:
                with open(f"/proc/{self.pid}/task/{self.pid}/children") as fh:
                    kids = fh.read().split()
                if kids:
                    return int(kids[0])
            except OSError:
                pass
            time.sleep(0.01)
        return self.pid

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the server (the profiler, if any, then writes its file) and wait."""
        if self.proc is None or self.proc.poll() is not None:
            return
        target = self.server_pid()
        os.kill(target, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def python() -> str:
    return sys.executable


def platform_proc(data_dir: str, log_path: str, **settings: str) -> Proc:
    port = free_port()
    env = {"PLATFORM_ADMIN_USERNAME": ADMIN[0], "PLATFORM_ADMIN_PASSWORD": ADMIN[1]}
    env.update({"PLATFORM_" + k.upper(): v for k, v in settings.items()})
    argv = [python(), "-m", "platform_server", "--host", "127.0.0.1", "--port", str(port), "--data-dir", data_dir]
    return Proc("platform server", argv, port, log_path, env)


def bare_proc(routes: dict[str, str], log_path: str) -> Proc:
    """The baseline app answering GET path with the bytes of file, for each path -> file."""
    port = free_port()
    argv = [python(), "-m", "scripts.benchmarks.bare_app", "--port", str(port)]
    for path, file in routes.items():
        argv += ["--route", f"{path}={file}"]
    return Proc("bare tornado app", argv, port, log_path)


def relay_proc(model_url: str, log_path: str) -> Proc:
    """The stack's floor: a minimal Tornado SSE relay of the model's stream (see relay.py)."""
    port = free_port()
    argv = [python(), "-m", "scripts.benchmarks.relay", "--port", str(port), "--model-url", model_url]
    return Proc("minimal relay", argv, port, log_path)


def model_proc(log_path: str, chunks: int, delay_ms: float) -> Proc:
    port = free_port()
    argv = [python(), "-m", "scripts.benchmarks.fake_model", "--port", str(port), "--chunks", str(chunks),
            "--delay-ms", str(delay_ms)]
    return Proc("scripted model", argv, port, log_path)
