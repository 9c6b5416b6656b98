"""Start the MCP connections in the background (a server that is down never blocks startup)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.mcp.manager import McpManager

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:
    manager = McpManager(platform.config, platform.services.tools)
    platform.services.mcp = manager
    platform.services.tools.create_mcp_tool = manager.create_alias_tool
    await manager.start()


async def stop(platform: Platform) -> None:
    await platform.services.mcp.stop()
