"""The MCP door's session manager: made now, started by the first MCP request (a start imports no `mcp`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.doors import MCP_DOOR
from platform_server.features.doors.mcp_door import McpDoor

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    platform.set_runtime(MCP_DOOR, McpDoor(platform))


async def stop(platform: Platform) -> None:
    await platform.runtime(MCP_DOOR).stop()
