"""The sandbox of every program run for an agent (shell_exec and skill scripts, stdio MCP servers, ACP agents).

One shape for all of them: bubblewrap (`bwrap`) started through `sandbox_launch.py`, which drops to
`sandbox_uid` when the server is root (see there why). Inside:

- its own user, pid, ipc, uts and cgroup namespaces (and network, unless allowed), no nested user
  namespaces, `--die-with-parent`, `--new-session`, uid/gid 65534;
- the system read-only (/usr and the /bin, /lib* links, the few /etc files programs need), a fresh
  /proc, /dev and private /tmp, the server's interpreter read-only (so a Python MCP server from the
  venv runs), and read-write only the one folder it works in, at /workspace;
- nothing else of the host: the data directory (platform.db, jwt_secret, other agents' folders) is
  not there at all, and a path under it is never exposed even when a command names it;
- limits set by `prlimit` as the program starts: processes (counted per sandbox, since each has
  its own user namespace), address space and CPU seconds per process;
- an environment built from nothing by the caller (never the server's).

Without a working bwrap (missing, or failing its self-test) `ensure_ready` raises
`SandboxUnavailable` and the caller refuses to run anything: there is no unsandboxed fallback.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from platform_server.config import Config

LAUNCHER = str(Path(__file__).with_name("sandbox_launch.py"))
PRLIMIT = "/usr/bin/prlimit"  # util-linux (essential in Debian): sets the limits inside, then execs
INSIDE_UID = 65534
WORKDIR = "/workspace"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/mime.types",
)
SERVER_LOGIN_VARS = ("LOGNAME", "USER", "SHELL", "TERM")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SELF_TEST_TIMEOUT_S = 15.0


class SandboxUnavailable(Exception):
    """bwrap is missing or failed its self-test: programs are refused, never run unsandboxed."""


@dataclass(frozen=True)
class Run:
    """One sandboxed program: the argv to exec (launcher, bwrap, prlimit, the command) and its environment."""

    argv: list[str]
    env: dict[str, str]


def base_env(home: str = WORKDIR) -> dict[str, str]:
    """The environment every sandboxed program starts from (the caller adds its own values)."""
    return {"PATH": PATH, "HOME": home, "LANG": "C.UTF-8"}


def sandbox_uid(config: Config) -> int:
    """The host uid the program runs as: `sandbox_uid` when the server is root, else the server's own (-1)."""
    return config.sandbox_uid if os.geteuid() == 0 else -1


class _Mounts:
    """bwrap mount arguments; every bind source is numbered for the launcher (`@<i>`)."""

    def __init__(self, data_dir: str) -> None:
        self.sources: list[str] = []
        self.args: list[str] = []
        self.bound: list[str] = []
        self.data_dir = os.path.realpath(data_dir)

    def _covered(self, path: str) -> bool:
        return any(path == b or path.startswith(b.rstrip("/") + "/") for b in self.bound)

    def _inside_data(self, path: str) -> bool:
        return path == self.data_dir or path.startswith(self.data_dir + "/")

    def bind(self, source: str, dest: str, writable: bool = False) -> None:
        self.sources.append(source)
        self.args += ["--bind" if writable else "--ro-bind", f"@{len(self.sources) - 1}", dest]
        self.bound.append(dest)

    def system(self) -> None:
        for path in SYSTEM_DIRS:
            if os.path.islink(path):
                self.args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                self.bind(path, path)
        for path in ETC_FILES:
            if os.path.exists(path):
                self.bind(path, path)

    def expose(self, path: str) -> None:
        """Bind an existing host path read-only where it is (and the symlinks leading to it); never the data dir."""
        path = os.path.abspath(path)
        real = os.path.realpath(path)
        if not os.path.exists(real) or self._inside_data(real) or self._inside_data(path) or self._covered(real):
            return
        self.bind(real, real)
        prefix = ""
        for part in path.strip("/").split("/"):
            prefix += "/" + part
            if os.path.islink(prefix):
                if not self._covered(prefix) and prefix not in SYSTEM_DIRS:
                    self.args += ["--symlink", os.readlink(prefix), prefix]
                    self.bound.append(prefix)
                break


def _limits(config: Config) -> list[str]:
    out = [PRLIMIT]
    if config.sandbox_max_processes > 0:
        out.append(f"--nproc={config.sandbox_max_processes}")
    if config.sandbox_memory_mb > 0:
        out.append(f"--as={config.sandbox_memory_mb * 1024 * 1024}")
    if config.sandbox_cpu_s > 0:
        # SIGXCPU at the soft limit (a recognisable end), SIGKILL a second later for a program that catches it
        out.append(f"--cpu={config.sandbox_cpu_s}:{config.sandbox_cpu_s + 1}")
    return [*out, "--"]


def interpreter_paths() -> list[str]:
    """The server's Python (venv and base install) when it lives outside /usr, for Python MCP servers."""
    return [p for p in dict.fromkeys([sys.prefix, sys.base_prefix]) if not p.startswith("/usr")]


def build(
    config: Config,
    command: Sequence[str],
    *,
    workdir: Path | None,
    network: bool,
    env: Mapping[str, str],
    expose: Sequence[str] = (),
) -> Run:
    """The argv that runs `command` in the sandbox, with `workdir` (if any) read-write at /workspace."""
    mounts = _Mounts(config.data_dir)
    mounts.system()
    if workdir is not None:
        mounts.bind(str(workdir), WORKDIR, writable=True)
    for path in [*interpreter_paths(), *config.sandbox_ro_paths, *expose]:
        mounts.expose(path)
    bwrap = [
        config.sandbox_bwrap_path,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        *([] if network else ["--unshare-net"]),
        "--disable-userns",
        "--uid",
        str(INSIDE_UID),
        "--gid",
        str(INSIDE_UID),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        # /tmp lives in memory: the same cap as one process's address space
        *(["--size", str(config.sandbox_memory_mb * 1024 * 1024)] if config.sandbox_memory_mb > 0 else []),
        "--tmpfs",
        "/tmp",
        *mounts.args,
        # clients that add the server's login variables to what they were given (the MCP SDK) lose them here
        *[arg for name in SERVER_LOGIN_VARS if name not in env for arg in ("--unsetenv", name)],
        "--chdir",
        WORKDIR if workdir is not None else "/",
        "--",
        *_limits(config),
        *command,
    ]
    launcher = [sys.executable, "-I", "-S", LAUNCHER, str(sandbox_uid(config)), str(len(mounts.sources)), *mounts.sources, "--"]
    return Run([*launcher, *bwrap], dict(env))


def exposed_paths(command: str, args: Sequence[str]) -> list[str]:
    """Absolute paths a configured command names (its program, script files): bound read-only."""
    return [a for a in [command, *args] if a.startswith("/") and os.path.exists(a)]


# ---- readiness ------------------------------------------------------------------------------

# bwrap settings that passed the self-test in this process; a failure is not kept, so installing
# bubblewrap (or fixing the setting) takes effect at the next call.
_ready: set[tuple[str, int, str]] = set()


async def ensure_ready(config: Config) -> None:
    """Raise SandboxUnavailable unless bwrap runs a trivial program in the sandbox."""
    key = (config.sandbox_bwrap_path, sandbox_uid(config), config.data_dir)
    if key in _ready:
        return
    bwrap = config.sandbox_bwrap_path
    if os.geteuid() == 0 and config.sandbox_uid <= 0:
        raise SandboxUnavailable("The sandbox is unavailable: sandbox_uid must be a uid other than root's; programs are not run")
    if not (os.path.isfile(bwrap) and os.access(bwrap, os.X_OK)):
        raise SandboxUnavailable(
            f"The sandbox is unavailable: bubblewrap is not installed at {bwrap} (Debian package `bubblewrap`, "
            "setting sandbox_bwrap_path); programs are not run without it"
        )
    run = build(config, ["/bin/true"], workdir=None, network=False, env=base_env("/"))
    try:
        proc = await asyncio.create_subprocess_exec(
            *run.argv, env=run.env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(proc.communicate(), SELF_TEST_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError) as exc:
        reason = exc or "timed out"
        raise SandboxUnavailable(f"The sandbox is unavailable: its self-test failed ({reason}); programs are not run without it") from None
    if proc.returncode != 0:
        detail = err.decode("utf-8", "replace").strip()[-500:] or f"exit code {proc.returncode}"
        raise SandboxUnavailable(f"The sandbox is unavailable: its self-test failed ({detail}); programs are not run without it")
    _ready.add(key)


def prepare_workdir(config: Config, path: Path) -> None:
    """Create the folder and (server running as root) give its tree to the sandbox uid, so the program
    can write there and nowhere else. Blocking: call through run_blocking."""
    path.mkdir(parents=True, exist_ok=True)
    uid = sandbox_uid(config)
    if uid <= 0:
        return
    os.chown(path, uid, uid, follow_symlinks=False)
    # fwalk holds each directory open: a directory swapped for a symlink mid-walk is not followed
    for _, dirs, names, dir_fd in os.fwalk(path, follow_symlinks=False):
        for name in dirs + names:
            try:
                if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_uid != uid:
                    os.chown(name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                pass


# ---- limits hit -------------------------------------------------------------------------------

_PROCESS_SIGNS = ("Cannot fork", "fork: retry", "fork: Resource temporarily unavailable", "Resource temporarily unavailable")
_MEMORY_SIGNS = ("Cannot allocate memory", "MemoryError", "std::bad_alloc", "out of memory", "Out of memory")


def limit_note(config: Config, returncode: int | None, output: str) -> str:
    """What sandbox limit a failed program ran into, as a sentence ('' when none is recognised)."""
    if returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        return f"The sandbox's CPU time limit was reached ({config.sandbox_cpu_s} s per process, setting sandbox_cpu_s); the program was stopped."
    if any(sign in output for sign in _PROCESS_SIGNS):
        return f"The sandbox's process limit was reached ({config.sandbox_max_processes} processes, setting sandbox_max_processes)."
    if any(sign in output for sign in _MEMORY_SIGNS):
        return f"The sandbox's memory limit was reached ({config.sandbox_memory_mb} MiB of address space per process, setting sandbox_memory_mb)."
    return ""
