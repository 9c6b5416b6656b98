"""Agent Client Protocol (ACP) client side: spawn an agent and do the `initialize` JSON-RPC handshake over stdio.

ACP messages are JSON-RPC 2.0 objects, one per line, on the agent's stdin/stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "platform-server", "title": "Platform", "version": "0.1.0"}
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


@dataclass(frozen=True)
class Launch:
    """How to start an agent: the argv and environment to exec (a sandbox's, built by the caller), and
    the working folder to name in `session/new` (as the agent sees it)."""

    argv: list[str]
    env: dict[str, str]
    session_cwd: str
    name: str  # the configured command, for messages


async def _spawn(launch: Launch) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *launch.argv,
        env=launch.env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        limit=MAX_LINE,
    )


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


async def handshake(launch: Launch, timeout_s: float) -> AcpHandshake:
    """Spawn the agent, send `initialize`, wait for its answer (bounded by `timeout_s`), stop the agent."""
    started = time.monotonic()
    command = launch.name

    def done(success: bool, message: str, **kw: Any) -> AcpHandshake:
        return AcpHandshake(success, message, int((time.monotonic() - started) * 1000), **kw)

    try:
        proc = await _spawn(launch)
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

    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
            "clientInfo": CLIENT_INFO,
        },
    }
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
    return done(
        True,
        f"{name} answered initialize with protocol version {version}{note}",
        protocol_version=version,
        agent_info=info,
        agent_capabilities=result.get("agentCapabilities") or {},
        auth_methods=result.get("authMethods") or [],
    )


# ---- sessions: delegate a task to an agent --------------------------------------------------------

UpdateHandler = Callable[[dict[str, Any]], None]
PermissionHandler = Callable[[dict[str, Any]], Awaitable["str | None"]]


class AcpError(Exception):
    """The agent could not be started or broke the protocol; the message is meant for humans."""


class AcpSession:
    """One agent process with one ACP session: `start`, `prompt` (streaming updates, answering permission
    requests), `cancel`, `close`. Requests from the agent other than permission requests are refused."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.proc: asyncio.subprocess.Process | None = None
        self.session_id: str | None = None
        self._next_id = 0
        self._waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stderr: list[bytes] = []
        self.on_update: UpdateHandler = lambda update: None
        self.on_permission: PermissionHandler | None = None

    async def start(self, timeout_s: float) -> dict[str, Any]:
        """Spawn the agent, `initialize`, `session/new`; returns the initialize result."""
        try:
            self.proc = await _spawn(self.launch)
        except OSError as exc:
            raise AcpError(f"Could not start {self.launch.name}: {exc.strerror or exc}") from None
        self._reader = asyncio.create_task(self._read())
        self._spawn(self._drain_stderr())
        init = await asyncio.wait_for(
            self.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
                    "clientInfo": CLIENT_INFO,
                },
            ),
            timeout_s,
        )
        created = await asyncio.wait_for(self.request("session/new", {"cwd": self.launch.session_cwd, "mcpServers": []}), timeout_s)
        self.session_id = str(created.get("sessionId") or "")
        if not self.session_id:
            raise AcpError("The agent's session/new answer has no sessionId")
        return init

    async def prompt(self, text: str) -> str:
        """Send the task; resolves with the stop reason once the agent has answered it."""
        result = await self.request("session/prompt", {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]})
        return str(result.get("stopReason") or "end_turn")

    async def cancel(self) -> None:
        """Tell the agent to stop the running prompt (`session/cancel` notification)."""
        if self.session_id is not None:
            await self._send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": self.session_id}})

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            msg = await future
        finally:
            self._waiting.pop(request_id, None)
        if "error" in msg:
            err = msg["error"] if isinstance(msg["error"], dict) else {}
            raise AcpError(f"The agent answered {method} with error {err.get('code')}: {err.get('message', '')}")
        result = msg.get("result")
        return result if isinstance(result, dict) else {}

    async def _send(self, msg: dict[str, Any]) -> None:
        if self.proc is None or self.proc.stdin is None or self.proc.stdin.is_closing():
            raise AcpError("The agent is not running")
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        await self.proc.stdin.drain()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(4096):
            self._stderr = (self._stderr + [chunk])[-8:]

    def stderr_tail(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace").strip()[-STDERR_KEEP:]

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue  # log noise on stdout
                if isinstance(msg, dict):
                    self._dispatch(msg)
        finally:
            tail = self.stderr_tail()
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(AcpError("The agent exited before answering" + (f": {tail}" if tail else "")))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method is None:
            future = self._waiting.get(msg.get("id"))
            if future is not None and not future.done():
                future.set_result(msg)
            return
        raw = msg.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if "id" not in msg:
            if method == "session/update" and isinstance(params.get("update"), dict):
                self.on_update(params["update"])
            return
        if method == "session/request_permission" and self.on_permission is not None:
            self._spawn(self._answer_permission(msg["id"], params))
            return
        self._spawn(self._send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}))

    async def _answer_permission(self, request_id: Any, params: dict[str, Any]) -> None:
        assert self.on_permission is not None
        try:
            option_id = await self.on_permission(params)
        except Exception:  # noqa: BLE001 - an unanswered permission request is a refusal
            option_id = None
        outcome = {"outcome": "selected", "optionId": option_id} if option_id else {"outcome": "cancelled"}
        with contextlib.suppress(AcpError, ConnectionError):
            await self._send({"jsonrpc": "2.0", "id": request_id, "result": {"outcome": outcome}})

    async def close(self) -> None:
        """Stop the agent's process group and the reader."""
        if self.proc is not None:
            await _stop(self.proc)
        for task in [self._reader, *self._tasks]:
            if task is not None and not task.done():
                task.cancel()
