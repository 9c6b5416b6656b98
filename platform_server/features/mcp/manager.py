"""The MCP connections (`platform.runtime(MCP)`): one background task per enabled server.

Each connection keeps one session open, registers the server's tools in the tool registry while
it is connected and unregisters them when it drops; a failed connection retries with backoff.
Nothing here blocks startup: connecting happens in the background and its state is reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from pathlib import Path
from typing import Any

from platform_server.blocking import run_blocking
from platform_server.features.mcp import service
from platform_server.features.mcp.models import McpServer
from platform_server.features.tools.models import Tool
from platform_server.features.tools.registry import ToolContext, ToolDefinition, ToolError, ToolRegistry
from platform_server.features.tools.schemas import McpToolCreate
from platform_server.integrations import mcp_client, sandbox
from platform_server.integrations.mcp_client import McpCallError, McpConnectionLost, McpTarget, McpToolInfo
from platform_server.web.context import Caller

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 300.0
CLOSE_TIMEOUT_S = 5.0


async def sandboxed(config: Any, target: McpTarget) -> McpTarget:
    """A stdio server's target wrapped in the sandbox (its work folder read-write at /workspace, the
    absolute paths its command names read-only, network only with sandbox_network); raises
    SandboxUnavailable when there is no working sandbox. Other transports are returned as they are."""
    if target.transport != "stdio":
        return target
    await sandbox.ensure_ready(config)
    workdir = Path(target.cwd)
    await run_blocking(sandbox.prepare_workdir, config, workdir)
    env = {**target.env, **sandbox.base_env()}
    run = sandbox.build(
        config,
        [target.command, *target.args],
        workdir=workdir,
        network=config.sandbox_network,
        env=env,
        expose=sandbox.exposed_paths(target.command, target.args),
    )
    return dataclasses.replace(target, command=run.argv[0], args=tuple(run.argv[1:]), env=run.env, cwd="")


class McpConnection:
    """One server's session, held by a task; `state` is connecting | connected | error."""

    def __init__(self, manager: "McpManager", row: McpServer) -> None:
        self.manager = manager
        self.server_id = int(row.id)
        self.name = row.name
        self.target: McpTarget = service.target_of(row)
        self.state = "connecting"
        self.error = ""
        self.client: Any = None
        self.tools: list[McpToolInfo] = []
        self._settled = asyncio.Event()  # set once the current attempt connected or failed
        self._drop = asyncio.Event()  # ends the open session (reconnect or close)
        self._wake = asyncio.Event()  # skips the backoff wait
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._trace = mcp_client.HttpTrace()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")

    async def _run(self) -> None:
        backoff = 1.0
        while not self._closing:
            self.state = "connecting"
            self._settled.clear()
            self._drop.clear()
            try:
                await self._session()
                backoff = 1.0
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure is a connection state
                self._failed(exc)
                self._settled.set()
            finally:
                self.client = None
                self.manager.on_disconnected(self)
            if self._closing:
                break
            if self.state == "connected":
                self.state = "connecting"
                continue  # dropped on purpose: reconnect now
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), backoff)
            self._wake.clear()
            backoff = min(backoff * 2, MAX_BACKOFF_S)
        self._settled.set()

    async def _session(self) -> None:
        timeout = self.manager.config.mcp_connect_timeout_s
        if self.target.stderr_path:
            os.makedirs(os.path.dirname(self.target.stderr_path), exist_ok=True)
        async with contextlib.AsyncExitStack() as stack:
            async with asyncio.timeout(timeout):
                self._trace = mcp_client.HttpTrace()
                target = await sandboxed(self.manager.config, self.target)
                client = await stack.enter_async_context(mcp_client.open_session(target, self.manager.config.tool_timeout_s, self._trace))
                tools = await mcp_client.list_tools(client)
            self.client, self.tools = client, tools
            self.state, self.error = "connected", ""
            self.manager.on_connected(self, mcp_client.session_info(client, tools))
            self._settled.set()
            await self._drop.wait()

    def _failed(self, exc: BaseException) -> None:
        reason = "Timed out connecting" if isinstance(exc, TimeoutError) else mcp_client.describe_error(exc, self._trace)
        tail = mcp_client.stderr_tail(self.target.stderr_path)
        self.state = "error"
        self.error = f"{reason}\n{tail}" if tail else reason
        log.info("MCP server %s: %s", self.name, reason)
        service.record_error(self.server_id, self.error)

    async def wait_settled(self, timeout: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._settled.wait(), timeout)

    def reconnect(self) -> None:
        """End the current session (or the backoff wait) and connect again."""
        self._settled.clear()
        self._drop.set()
        self._wake.set()

    async def close(self) -> None:
        self._closing = True
        self._drop.set()
        self._wake.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT_S)
        except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - a stuck transport is cancelled
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def call(self, mcp_tool: str, args: dict[str, Any]) -> str:
        if self.state != "connected" or self.client is None:
            self._wake.set()
            await self.wait_settled(self.manager.config.mcp_connect_timeout_s)
        client = self.client
        if self.state != "connected" or client is None:
            raise ToolError(f"MCP server '{self.name}' is not connected: {self.error or self.state}")
        try:
            return await mcp_client.call_tool(client, mcp_tool, args, self.manager.config.tool_timeout_s)
        except McpCallError as exc:
            raise ToolError(str(exc)) from None
        except McpConnectionLost as exc:
            self.reconnect()
            raise ToolError(f"MCP server '{self.name}' connection lost ({exc}); reconnecting") from None


class McpManager:
    """Connections by server id, and which registry names each one put there."""

    def __init__(self, config: Any, registry: ToolRegistry) -> None:
        self.config = config
        self.registry = registry
        self.connections: dict[int, McpConnection] = {}
        self._owner: dict[str, McpConnection] = {}  # registry name -> connection that registered it

    async def start(self) -> None:
        for row in service.enabled_rows():
            self._spawn(row)

    async def stop(self) -> None:
        conns = list(self.connections.values())
        self.connections.clear()
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

    def _spawn(self, row: McpServer) -> McpConnection:
        conn = McpConnection(self, row)
        self.connections[conn.server_id] = conn
        conn.start()
        return conn

    async def disconnect(self, server_id: int) -> None:
        """Close the server's connection (its tools are unregistered)."""
        old = self.connections.pop(server_id, None)
        if old is not None:
            await old.close()

    async def apply(self, server_id: int, wait: bool = True) -> None:
        """After a change: reconnect an enabled server (waiting for the attempt), stop a disabled or deleted one."""
        await self.disconnect(server_id)
        row = McpServer.get_or_none(McpServer.id == server_id)
        if row is None or not row.enabled:
            return
        conn = self._spawn(row)
        if wait:
            await conn.wait_settled(self.config.mcp_connect_timeout_s + 1)

    async def refresh_all(self) -> None:
        """Reconnect every enabled server and re-list its tools; stop connections of servers gone or disabled."""
        ids = {int(r.id) for r in service.enabled_rows()} | set(self.connections)
        await asyncio.gather(*(self.apply(i) for i in ids))

    def status(self, row: McpServer) -> dict[str, Any]:
        conn = self.connections.get(int(row.id))
        if not row.enabled:
            return {"status": "disabled", "error": None}
        if conn is None:
            return {"status": "disconnected", "error": row.last_error or None}
        return {"status": conn.state, "error": conn.error or None}

    def registered(self) -> set[str]:
        return set(self.registry.names())

    # ---- registry ----------------------------------------------------------------------

    def _definition(self, conn: McpConnection, name: str, tool: McpToolInfo) -> ToolDefinition:
        server_id, mcp_tool = conn.server_id, tool.name

        async def run(args: dict[str, Any], ctx: ToolContext) -> str:
            current = self.connections.get(server_id)
            if current is None:
                raise ToolError(f"MCP server '{conn.name}' is disabled or deleted")
            return await current.call(mcp_tool, args)

        description = tool.description or f"Tool {tool.name} of MCP server {conn.name}"
        host = "mcp_stdio" if conn.target.transport == "stdio" else None  # runs a program on the host
        return ToolDefinition(name, description, tool.input_schema, run, source="mcp", host=host)

    def on_connected(self, conn: McpConnection, info: Any) -> None:
        """Record the discovery and register the server's tools (and aliases); drop names no longer offered."""
        if self.connections.get(conn.server_id) is not conn:
            return
        row = service.record_discovery(
            conn.server_id, conn.tools, {"name": info.server_name, "version": info.server_version, "protocolVersion": info.protocol_version}
        )
        if row is None:
            return
        by_name = {t.name: t for t in conn.tools}
        wanted: dict[str, McpToolInfo] = {service.tool_name(row.name, t.name): t for t in conn.tools}
        for alias in service.live_aliases(conn.server_id):
            if alias.mcp_tool in by_name:
                wanted[alias.name] = by_name[alias.mcp_tool]
        new_rows = service.prepare_tool_rows(row, list(wanted))
        for name, tool in wanted.items():
            self.registry.register(self._definition(conn, name, tool))
            self._owner[name] = conn
        service.finish_new_rows(row, new_rows, {n: t.name for n, t in wanted.items()})
        for name, owner in list(self._owner.items()):
            if owner is conn and name not in wanted:
                self._unregister(name)

    def on_disconnected(self, conn: McpConnection) -> None:
        for name, owner in list(self._owner.items()):
            if owner is conn:
                self._unregister(name)

    def _unregister(self, name: str) -> None:
        self._owner.pop(name, None)
        self.registry.unregister(name)

    def create_alias_tool(self, caller: Caller, req: McpToolCreate) -> Tool:
        """`POST /api/v1/tools` (the registry's `create_mcp_tool`): store the alias and make it runnable."""
        server, alias, row = service.create_alias(caller, req)
        self.register_alias(int(server.id), alias.name, alias.mcp_tool)
        return row

    def register_alias(self, server_id: int, name: str, mcp_tool: str) -> None:
        """Make a new alias runnable now when its server is connected (else on its next connection)."""
        conn = self.connections.get(server_id)
        if conn is None or conn.state != "connected":
            return
        tool = next((t for t in conn.tools if t.name == mcp_tool), None)
        if tool is not None:
            self.registry.register(self._definition(conn, name, tool))
            self._owner[name] = conn

    # ---- one-off probe -------------------------------------------------------------------

    async def test(self, row: McpServer) -> dict[str, Any]:
        """Connect, initialize and list tools on a separate session: `{success, message, tools, latencyMs, ...}`."""
        target = service.target_of(row)
        if target.stderr_path:
            target = dataclasses.replace(target, stderr_path=target.stderr_path.replace(".stderr.log", ".test.stderr.log"))
            os.makedirs(os.path.dirname(target.stderr_path), exist_ok=True)
        started = time.monotonic()
        trace = mcp_client.HttpTrace()
        try:
            async with asyncio.timeout(self.config.mcp_connect_timeout_s):
                target = await sandboxed(self.config, target)
                async with mcp_client.open_session(target, self.config.mcp_connect_timeout_s, trace) as client:
                    tools = await mcp_client.list_tools(client)
                    info = mcp_client.session_info(client, tools)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the failure is the answer
            reason = (
                f"Timed out after {self.config.mcp_connect_timeout_s:g} seconds"
                if isinstance(exc, TimeoutError)
                else mcp_client.describe_error(exc, trace)
            )
            tail = mcp_client.stderr_tail(target.stderr_path)
            return {
                "success": False,
                "message": f"{reason}\n{tail}" if tail else reason,
                "tools": [],
                "latencyMs": int((time.monotonic() - started) * 1000),
            }
        latency = int((time.monotonic() - started) * 1000)
        return {
            "success": True,
            "message": f"Connected to {info.server_name or row.name}: {len(tools)} tools",
            "tools": [{"name": t.name, "toolName": service.tool_name(row.name, t.name), "description": t.description} for t in tools],
            "latencyMs": latency,
            "protocolVersion": info.protocol_version,
            "serverInfo": {"name": info.server_name, "version": info.server_version},
        }
