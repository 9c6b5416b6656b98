"""MCP client side over the official `mcp` SDK: open a session (streamable HTTP, SSE, stdio), list and call tools.

The SDK is imported on first use (`lazy_import`) so a server with no MCP servers configured never pays for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import httpx2
    import mcp
    from mcp import types as mcp_types
    from mcp.client import sse as mcp_sse
    from mcp.client import stdio as mcp_stdio
    from mcp.client import streamable_http as mcp_streamable_http
    from mcp.shared import _httpx_utils as mcp_httpx
    from mcp.shared import exceptions as mcp_exceptions
else:
    httpx2 = lazy_import("httpx2")
    mcp = lazy_import("mcp")
    mcp_types = lazy_import("mcp.types")
    mcp_sse = lazy_import("mcp.client.sse")
    mcp_stdio = lazy_import("mcp.client.stdio")
    mcp_streamable_http = lazy_import("mcp.client.streamable_http")
    mcp_httpx = lazy_import("mcp.shared._httpx_utils")
    mcp_exceptions = lazy_import("mcp.shared.exceptions")

TRANSPORTS = ("streamable_http", "sse", "stdio")
CLIENT_NAME = "platform-server"
CLIENT_VERSION = "0.1.0"


@dataclass(frozen=True)
class McpTarget:
    """Where and how to reach one MCP server (secrets included: never send this to a client)."""

    transport: str
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    stderr_path: str = ""  # stdio: the server's stderr goes here (truncated per connection)


@dataclass
class McpToolInfo:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class McpSessionInfo:
    protocol_version: str
    server_name: str
    server_version: str
    tools: list[McpToolInfo]


class HttpTrace:
    """Remembers the last HTTP error status of a session (the SDK reports a generic JSON-RPC error instead)."""

    def __init__(self) -> None:
        self.last_error = ""

    async def on_response(self, response: Any) -> None:
        if response.status_code >= 400:
            self.last_error = f"HTTP {response.status_code} {response.reason_phrase or ''}".strip()

    def client(self, headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
        """An `McpHttpClientFactory` whose clients report to this trace."""
        http = mcp_httpx.create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        http.event_hooks = {"response": [self.on_response]}
        return http


class McpCallError(Exception):
    """The server answered the call with an error result (`isError`) or a JSON-RPC error."""


class McpConnectionLost(Exception):
    """The transport is gone; the connection must be re-established."""


def _timeout(seconds: float) -> Any:
    return httpx2.Timeout(seconds, read=max(seconds, 300.0))


@contextlib.asynccontextmanager
async def _streamable_http(target: McpTarget, timeout_s: float, trace: HttpTrace) -> AsyncIterator[Any]:
    async with trace.client(headers=dict(target.headers), timeout=_timeout(timeout_s)) as http:
        async with mcp_streamable_http.streamable_http_client(target.url, http_client=http) as streams:
            yield streams


@contextlib.asynccontextmanager
async def _stdio(target: McpTarget) -> AsyncIterator[Any]:
    params = mcp_stdio.StdioServerParameters(command=target.command, args=list(target.args), env=dict(target.env), cwd=target.cwd or None)
    if target.cwd:
        pathlib.Path(target.cwd).mkdir(parents=True, exist_ok=True)
    with open(target.stderr_path or os.devnull, "w", encoding="utf-8") as errlog:
        async with mcp_stdio.stdio_client(params, errlog=errlog) as streams:
            yield streams


def _transport(target: McpTarget, timeout_s: float, trace: HttpTrace) -> Any:
    if target.transport == "streamable_http":
        return _streamable_http(target, timeout_s, trace)
    if target.transport == "sse":
        return mcp_sse.sse_client(target.url, headers=dict(target.headers), timeout=timeout_s, httpx_client_factory=trace.client)
    if target.transport == "stdio":
        return _stdio(target)
    raise ValueError(f"Unknown MCP transport: {target.transport}")


@contextlib.asynccontextmanager
async def open_session(target: McpTarget, timeout_s: float, trace: HttpTrace | None = None) -> AsyncIterator[Any]:
    """An initialized `mcp.Client` (protocol negotiated: `server/discover`, else `initialize`)."""
    client = mcp.Client(
        _transport(target, timeout_s, trace or HttpTrace()),
        client_info=mcp_types.Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
        read_timeout_seconds=timeout_s,
        cache=None,
    )
    async with client:
        yield client


async def list_tools(client: Any, max_pages: int = 20) -> list[McpToolInfo]:
    """Every tool the server offers (pagination followed up to `max_pages`)."""
    tools: list[McpToolInfo] = []
    cursor: str | None = None
    for _ in range(max_pages):
        result = await client.list_tools(cursor=cursor)
        for tool in result.tools:
            schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
            if schema.get("type") != "object":
                schema = {"type": "object", "properties": {}}
            tools.append(McpToolInfo(tool.name, tool.description or "", schema))
        cursor = getattr(result, "next_cursor", None)
        if not cursor:
            break
    return tools


def session_info(client: Any, tools: list[McpToolInfo]) -> McpSessionInfo:
    info = client.server_info
    return McpSessionInfo(client.protocol_version or "", getattr(info, "name", "") or "", getattr(info, "version", "") or "", tools)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind} {getattr(block, 'mime_type', '')}: {len(getattr(block, 'data', '') or '')} base64 characters]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        return text if isinstance(text, str) else f"[resource {resource.uri}]"
    if kind == "resource_link":
        return f"[resource link {block.uri}]"
    return f"[{kind or 'unknown'} content]"


def result_text(result: Any) -> str:
    """The text of a `CallToolResult`: its content blocks, or the structured content as JSON."""
    parts = [_block_text(b) for b in (result.content or [])]
    text = "\n".join(p for p in parts if p)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return text


async def call_tool(client: Any, name: str, arguments: dict[str, Any], timeout_s: float) -> str:
    """Run one tool; raises McpCallError for a tool or protocol error, McpConnectionLost when the transport is gone."""
    try:
        result = await client.call_tool(name, arguments, read_timeout_seconds=timeout_s)
    except mcp_exceptions.MCPError as exc:
        if exc.code == mcp_types.CONNECTION_CLOSED:
            raise McpConnectionLost(exc.message) from None
        raise McpCallError(f"MCP error {exc.code}: {exc.message}") from None
    except (OSError, EOFError) as exc:
        raise McpConnectionLost(f"{type(exc).__name__}: {exc}") from None
    text = result_text(result)
    if result.is_error:
        raise McpCallError(text or f"MCP tool {name} failed")
    return text


def describe_error(exc: BaseException, trace: HttpTrace | None = None) -> str:
    """A one-line reason for a failed connection (exception groups unwrapped to their first cause)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, mcp_exceptions.MCPError):
        text = f"MCP error {exc.code}: {exc.message}"
    elif isinstance(exc, TimeoutError):
        text = "Timed out"
    else:
        detail = str(exc).strip()
        text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    if trace is not None and trace.last_error and trace.last_error not in text:
        text += f" ({trace.last_error})"
    return text


def stderr_tail(path: str, limit: int = 600) -> str:
    """The end of a stdio server's stderr log ('' when empty or missing)."""
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
