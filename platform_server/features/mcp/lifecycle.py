"""Start the MCP connections in the background (a server that is down never blocks startup)."""
from __future__ import annotations

from typing import Any

from platform_server.features.mcp.manager import McpManager


async def start(platform: Any) -> None:
    manager = McpManager(platform.config, platform.services["tools"])
    platform.services["mcp"] = manager
    await manager.start()


async def stop(platform: Any) -> None:
    manager = platform.services.pop("mcp", None)
    if manager is not None:
        await manager.stop()
