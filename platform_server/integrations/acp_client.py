"""Agent Client Protocol (ACP) client side: spawn an agent and do the `initialize` JSON-RPC handshake over stdio.

ACP messages are JSON-RPC 2.0 objects, one per line, on the agent's stdin/stdout.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from typing import Any

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "platform-server", "title": "Platform", "version": "0.1.0"}
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
MAX_LINE = 1024 * 1024
STDERR_KEEP = 2000


@dataclass
class AcpHandshake:
    success: bool
    message: str
    latency_ms: int
    protocol_version: int | None = None
    agent_info: dict[str, Any] | None = None
    agent_capabilities: dict[str, Any] = field(default_factory=dict)
    auth_methods: list[Any] = field(default_factory=list)


def process_env(extra: dict[str, str]) -> dict[str, str]:
    """A small inherited environment (no server secrets) with the endpoint's variables over it."""
    env = {k: v for k in INHERITED_ENV if (v := os.environ.get(k)) is not None}
    env.update(extra)
    return env


def _kill(proc: asyncio.subprocess.Process, sig: int) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Close stdin, then SIGTERM and SIGKILL the agent's process group."""
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    _kill(proc, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), 2.0)
    except asyncio.TimeoutError:
        _kill(proc, signal.SIGKILL)
        await proc.wait()


async def _read_response(proc: asyncio.subprocess.Process, request_id: int) -> dict[str, Any]:
    """Read lines until the response to `request_id`; answer requests from the agent with 'method not found'."""
    assert proc.stdout is not None and proc.stdin is not None
    while True:
        line = await proc.stdout.readline()
        if not line:
            raise EOFError("the agent closed its output before answering initialize")
        try:
            msg = json.loads(line)
        except ValueError:
            continue  # log noise on stdout
        if not isinstance(msg, dict):
            continue
        if "method" in msg and "id" in msg:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
            proc.stdin.write((json.dumps(reply) + "\n").encode())
            continue
        if msg.get("id") == request_id and ("result" in msg or "error" in msg):
            return msg


async def handshake(command: str, args: list[str], env: dict[str, str], cwd: str, timeout_s: float) -> AcpHandshake:
    """Spawn the agent, send `initialize`, wait for its answer (bounded by `timeout_s`), stop the agent."""
    started = time.monotonic()

    def done(success: bool, message: str, **kw: Any) -> AcpHandshake:
        return AcpHandshake(success, message, int((time.monotonic() - started) * 1000), **kw)

    full_env = process_env(env)
    executable = shutil.which(command, path=full_env.get("PATH")) if os.sep not in command else command
    if executable is None or not os.path.isfile(executable) or not os.access(executable, os.X_OK):
        return done(False, f"Command not found or not executable: {command}")
    try:
        proc = await asyncio.create_subprocess_exec(
            executable, *args, cwd=cwd, env=full_env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True, limit=MAX_LINE,
        )
    except OSError as exc:
        return done(False, f"Could not start {command}: {exc.strerror or exc}")
    stderr_chunks: list[bytes] = []

    async def drain_stderr() -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(4096):
            stderr_chunks.append(chunk)
            while sum(len(c) for c in stderr_chunks) > STDERR_KEEP * 2 and len(stderr_chunks) > 1:
                stderr_chunks.pop(0)

    drain = asyncio.create_task(drain_stderr())

    def with_stderr(text: str) -> str:
        tail = b"".join(stderr_chunks).decode("utf-8", "replace").strip()[-STDERR_KEEP:]
        return f"{text}\n{tail}" if tail else text

    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
        "clientInfo": CLIENT_INFO,
    }}
    failure = ""
    msg: dict[str, Any] = {}
    try:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(request) + "\n").encode())
        await proc.stdin.drain()
        msg = await asyncio.wait_for(_read_response(proc, 1), timeout_s)
    except asyncio.TimeoutError:
        failure = f"No answer to initialize within {timeout_s:g} seconds"
    except (EOFError, ConnectionError, ValueError) as exc:
        failure = f"Handshake failed: {exc}"
    finally:
        await _stop(proc)
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(drain, 1.0)
        drain.cancel()
    if failure:
        return done(False, with_stderr(failure))
    if "error" in msg:
        err = msg["error"] if isinstance(msg["error"], dict) else {}
        return done(False, f"The agent answered initialize with error {err.get('code')}: {err.get('message', '')}")
    result = msg["result"] if isinstance(msg.get("result"), dict) else {}
    version = result.get("protocolVersion")
    if not isinstance(version, int) or isinstance(version, bool):
        return done(False, "The agent's initialize answer has no integer protocolVersion")
    info = result["agentInfo"] if isinstance(result.get("agentInfo"), dict) else None
    name = (info or {}).get("title") or (info or {}).get("name") or command
    note = "" if version == PROTOCOL_VERSION else f" (client speaks version {PROTOCOL_VERSION})"
    return done(True, f"{name} answered initialize with protocol version {version}{note}", protocol_version=version,
                agent_info=info, agent_capabilities=result.get("agentCapabilities") or {},
                auth_methods=result.get("authMethods") or [])
