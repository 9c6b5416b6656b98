"""Start the MCP connections in the background (a server that is down never blocks startup)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.mcp import MCP
from platform_server.features.mcp.manager import McpManager
from platform_server.features.tools import TOOLS

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    manager = McpManager(platform.config, platform.runtime(TOOLS))
    platform.set_runtime(MCP, manager)
    platform.runtime(TOOLS).create_mcp_tool = manager.create_alias_tool
    await manager.start()


async def stop(platform: Platform) -> None:
    await platform.runtime(MCP).stop()
