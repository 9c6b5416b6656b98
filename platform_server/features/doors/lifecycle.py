"""The MCP door's session manager: made now, started by the first MCP request (a start imports no `mcp`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.doors.mcp_door import McpDoor

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:
    platform.services.mcp_door = McpDoor(platform)


async def stop(platform: Platform) -> None:
    await platform.services.mcp_door.stop()
