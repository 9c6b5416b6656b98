"""What the /api/v1/mcp/servers routes answer: the API document's view models (they only document; the routes
keep building plain dicts with `service.to_dict` and `tools_view`, and the test suite checks every answer)."""

from __future__ import annotations

from pydantic import Field, JsonValue

from platform_server.serialize import View


class McpServerInfoView(View):
    """What the server said of itself on `initialize`."""

    name: str | None
    version: str | None


class McpServerView(View):
    """An MCP server with its runtime status; header and env values are masked."""

    id: str
    name: str
    description: str
    transport: str = Field(description="stdio, sse or streamable_http")
    url: str
    headers: dict[str, str]
    command: str
    args: list[str]
    env: dict[str, str]
    enabled: bool
    disclosureTier: str
    status: str = Field(description="connected, connecting, disconnected, disabled or error")
    error: str | None
    serverInfo: McpServerInfoView | None
    protocolVersion: str | None
    toolCount: int
    lastConnectedTime: str | None
    createTime: str | None
    updateTime: str | None


class McpTestToolView(View):
    name: str
    toolName: str = Field(description="the name agents call it by")
    description: str


class McpTestView(View):
    """A connection test on a separate session; on failure `message` says why and `tools` is empty."""

    success: bool
    message: str
    tools: list[McpTestToolView]
    latencyMs: int
    protocolVersion: str | None = None
    serverInfo: McpServerInfoView | None = None


class McpToolView(View):
    """A tool the server listed on its last connection, with its registry name and tool row."""

    name: str
    toolName: str
    description: str
    inputSchema: dict[str, JsonValue] = Field(description="the server's JSON schema of the arguments")
    toolId: str | None
    enabled: bool
    disclosureTier: str
    registered: bool
