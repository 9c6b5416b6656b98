"""MCP servers: global, admin-managed connections whose discovered tools join the tool registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.mcp.manager import McpManager


MCP: RuntimeKey[McpManager] = RuntimeKey("mcp")
