"""A real MCP server for tests (the SDK's server side): `python -m tests.helpers.mcp_server stdio|http|sse [--port N] [--require-header NAME=VALUE]`.

Tools: `add`, `text.echo` (a name with a dot), `fail` (an error result), `counter` (state kept by the
process, so a test can tell one long-lived session from reconnects), `env_probe` (reads an env variable).
"""
from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("test-mcp", version="1.2.3", log_level="WARNING")
_count = 0


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool(name="text.echo")
def echo(text: str) -> str:
    """Echo the text back."""
    return "echo: " + text


@app.tool()
def fail(message: str) -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@app.tool()
def counter() -> int:
    """How many times this tool was called in this server process."""
    global _count
    _count += 1
    return _count


@app.tool()
def env_probe(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


def _guarded(asgi: Any, header: str, value: str) -> Any:
    """Answer 401 to requests without `header: value` (proves the client sends configured headers)."""
    wanted = (header.lower().encode(), value.encode())

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and wanted not in [(k.lower(), v) for k, v in scope.get("headers", [])]:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"missing or wrong credentials"})
            return
        await asgi(scope, receive, send)

    return guarded


async def _serve_http(kind: str, port: int, require: str | None) -> None:
    import uvicorn

    asgi: Any = app.streamable_http_app() if kind == "http" else app.sse_app()
    if require:
        name, _, value = require.partition("=")
        asgi = _guarded(asgi, name, value)
    config = uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--require-header", default=None)
    opts = parser.parse_args()
    if opts.transport == "stdio":
        app.run("stdio")
    else:
        asyncio.run(_serve_http(opts.transport, opts.port, opts.require_header))


if __name__ == "__main__":
    main()
