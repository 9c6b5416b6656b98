"""Seed the built-in ACP endpoints (disabled until an admin enables them); register `acp_delegate`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.acp import delegate, service
from platform_server.features.tools.registry import ToolDefinition

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    service.seed_builtins()


def agent_tools(platform: Platform) -> list[ToolDefinition]:
    return [delegate.definition()]
