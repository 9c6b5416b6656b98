"""Doors for the clients people already use: agents as an OpenAI-compatible API and as an MCP server
(with the wiki), both over the same chat service, roles and workspaces as the REST routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.doors.mcp_door import McpDoor


MCP_DOOR: RuntimeKey[McpDoor] = RuntimeKey("mcp_door")
