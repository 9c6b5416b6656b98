"""`/api/v1/mcp/serve`: the `mcp` SDK's own streamable HTTP transport, served from Tornado.

The SDK's transport is an ASGI app (StreamableHTTPSessionManager). Rather than re-implementing the transport's HTTP
semantics (protocol version negotiation, JSON-RPC framing, SSE answers, the newer stateless protocol), the handler
authenticates the request the platform's way and hands it, as an ASGI call, to the SDK's session manager: the
transport stays the SDK's, so it follows the SDK's upgrades. The manager runs stateless (every request stands alone,
no session held in this process), so any process of a deployment can answer any request and a restart loses
nothing. Its task group lives from the first MCP request to the platform's stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

import tornado.iostream

from platform_server import lazy
from platform_server.features.doors import MCP_DOOR, agents_door
from platform_server.lazy import lazy_import
from platform_server.web.base import ApiHandler
from platform_server.web.context import LOGIN
from platform_server.web.errors import ApiError, BadRequest

if TYPE_CHECKING:
    import mcp.server.streamable_http_manager as mcp_http

    from platform_server.features.doors import mcp_tools
    from platform_server.platform import Platform
else:
    mcp_http = lazy_import("mcp.server.streamable_http_manager")
    mcp_tools = lazy_import("platform_server.features.doors.mcp_tools")

MCP_TOOLS = "platform_server.features.doors.mcp_tools"
log = logging.getLogger(__name__)

ASGI = MutableMapping[str, Any]


class McpDoor:
    """The SDK's session manager (`platform.runtime(MCP_DOOR)`), started on the first request, stopped with the platform."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self._manager: mcp_http.StreamableHTTPSessionManager | None = None
        self._running: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stop = asyncio.Event()

    async def manager(self) -> mcp_http.StreamableHTTPSessionManager:
        """The running session manager (made and started by the first caller; the others wait for it)."""
        ready = self._ready
        if ready is None:
            ready = self._ready = asyncio.Event()
            try:
                await lazy.warm_up((MCP_TOOLS,))  # the SDK's import takes seconds: in a worker thread, the loop serves on
                manager = mcp_tools.session_manager(self.platform)
            except Exception as exc:
                log.exception("the MCP server could not start")
                self._ready = None  # the next request tries again
                ready.set()
                raise ApiError("The MCP server could not start", 503) from exc
            self._running = asyncio.create_task(self._run(manager, ready))
        await ready.wait()
        if self._manager is None:
            raise ApiError("The MCP server could not start", 503)
        return self._manager

    async def _run(self, manager: mcp_http.StreamableHTTPSessionManager, ready: asyncio.Event) -> None:
        try:
            async with manager.run():
                self._manager = manager
                ready.set()
                await self._stop.wait()
        except Exception:
            log.exception("the MCP server's session manager stopped")
        finally:
            self._manager = None
            if not self._stop.is_set():
                self._ready = None  # it died: the next request starts a new one
            ready.set()

    async def stop(self) -> None:
        self._stop.set()
        if self._running is not None:
            await asyncio.wait([self._running], timeout=5)


_ERROR_ENVELOPE = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_RPC_ID = {"anyOf": [{"type": "string"}, {"type": "integer"}, {"nullable": True, "enum": [None]}]}
# A JSON-RPC 2.0 response of MCP's streamable HTTP transport (https://modelcontextprotocol.io: a request's
# `result`, or an `error`); its results are MCP's own (initialize, tools/list, tools/call, ...).
JSON_RPC_RESPONSE = {
    "type": "object",
    "required": ["jsonrpc", "id"],
    "properties": {
        "jsonrpc": {"type": "string", "enum": ["2.0"]},
        "id": _RPC_ID,
        "result": {"type": "object", "additionalProperties": True},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}},
        },
    },
}
_RPC_CONTENT = {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcResponse"}}}


class McpServeHandler(ApiHandler):
    """The MCP endpoint (streamable HTTP): JSON-RPC messages are POSTed; the answer is JSON or an SSE stream."""

    access = {"POST": LOGIN}
    tags = ("MCP server",)
    # MCP's transport answers in JSON-RPC, not the envelope; the caller's checks (auth, workspace) in the envelope
    openapi_schemas = {"JsonRpcResponse": JSON_RPC_RESPONSE}
    openapi_responses = {
        "POST": {
            "200": {
                "description": "The JSON-RPC response, as JSON or as one SSE `message` event (the client's Accept decides)",
                "content": {**_RPC_CONTENT, "text/event-stream": {"schema": {"type": "string"}}},
            },
            "202": {"description": "A notification or response accepted (no body)"},
            "400": {
                "description": "Not a JSON-RPC message (a JSON-RPC error), or a bad X-Workspace-Id (the envelope)",
                "content": {
                    "application/json": {
                        "schema": {"anyOf": [{"$ref": "#/components/schemas/JsonRpcResponse"}, {"$ref": "#/components/schemas/Error"}]}
                    }
                },
            },
            "401": {"description": "Token expired or invalid", "content": _ERROR_ENVELOPE},
            "403": {"description": "Not a member of the X-Workspace-Id workspace", "content": _ERROR_ENVELOPE},
            "406": {"description": "Accept lacks application/json and text/event-stream (a JSON-RPC error)", "content": _RPC_CONTENT},
            "413": {"description": "Request body too large", "content": _ERROR_ENVELOPE},
            "415": {"description": "Content-Type is not application/json (a JSON-RPC error)", "content": _RPC_CONTENT},
            "429": {"description": "Too many requests", "content": _ERROR_ENVELOPE},
            "500": {"description": "Internal server error", "content": _ERROR_ENVELOPE},
            "503": {"description": "The MCP door is off or not started yet", "content": _ERROR_ENVELOPE},
        }
    }

    def initialize(self, long_params: frozenset[str] = frozenset(), template: str = "") -> None:
        super().initialize(long_params, template)
        self._gone = asyncio.Event()

    def _write_error_body(self, error: ApiError) -> None:
        if error.http_status == 401:
            self.set_header("WWW-Authenticate", 'Bearer realm="agent-platform"')  # what an MCP client reads on a 401
        super()._write_error_body(error)

    # Only POST: a stateless server has no session to stream to (GET) or to end (DELETE); the transport's
    # specification lets a server answer both 405, which the base handler does (with `Allow: POST`).
    async def post(self) -> None:
        """An MCP JSON-RPC message (initialize, tools/list, tools/call, resources/list, resources/read, ...)."""
        await self._serve()

    async def _serve(self) -> None:
        caller = self.require_caller()
        raw = (self.request.headers.get("X-Workspace-Id") or "").strip()
        if raw and (not raw.isdigit() or not 0 < int(raw) < 2**63):
            raise BadRequest("Invalid value for parameter 'X-Workspace-Id': expected Long")
        only = int(raw) if raw else None
        if only is not None:
            agents_door.workspace_roles(caller.principal, only)  # 403 before anything runs when not a member
        manager = await self.platform.runtime(MCP_DOOR).manager()
        token = agents_door.DOOR_CALLER.set((caller.principal, only))
        try:
            await manager.handle_request(self._scope(), self._receive, self._send)
        finally:
            agents_door.DOOR_CALLER.reset(token)
        if not self._finished:
            self.finish()

    def _scope(self) -> ASGI:
        req = self.request
        host, _, port = (req.host or "localhost").partition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": req.version.removeprefix("HTTP/") or "1.1",
            "method": req.method,
            "scheme": req.protocol,
            "path": req.path,
            "raw_path": req.path.encode("latin-1", "replace"),
            "query_string": req.query.encode("latin-1", "replace"),
            "root_path": "",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1", "replace")) for k, v in req.headers.get_all()],
            "client": (self.client_ip, 0),
            "server": (host, int(port) if port.isdigit() else 80),
        }

    async def _receive(self) -> ASGI:
        if not getattr(self, "_body_sent", False):
            self._body_sent = True
            return {"type": "http.request", "body": self.body_bytes, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: ASGI) -> None:
        if self._finished:
            return
        if message["type"] == "http.response.start":
            self.set_status(int(message["status"]))
            for name, value in message.get("headers", []):
                key = name.decode("latin-1")
                if key.lower() not in ("content-length", "transfer-encoding", "connection"):  # Tornado frames the body
                    self.set_header(key, value.decode("latin-1"))
            if self._headers.get("Content-Type", "").startswith("text/event-stream"):
                await self._flush()  # the headers leave now: a long tool call is a stream under way, not a timed-out request
            return
        if message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body:
                self.write(body)
            if message.get("more_body"):
                await self._flush()  # an SSE answer: each event leaves now
            else:
                self.finish()

    async def _flush(self) -> None:
        try:
            await self.flush()
        except tornado.iostream.StreamClosedError:
            self._gone.set()  # the SDK sees the disconnect on its next receive

    def on_connection_close(self) -> None:
        super().on_connection_close()
        self._gone.set()
