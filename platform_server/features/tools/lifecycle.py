"""Create the tool registry (`platform.services["tools"]`) with the built-in system tools."""
from __future__ import annotations

from typing import Any

from platform_server.features.tools.builtins import BUILTIN_TOOLS
from platform_server.features.tools.registry import ToolRegistry


async def start(platform: Any) -> None:
    registry = ToolRegistry(timeout_s=platform.config.tool_timeout_s)
    for definition in BUILTIN_TOOLS:
        registry.register(definition)
    platform.services["tools"] = registry


async def stop(platform: Any) -> None:
    platform.services.pop("tools", None)
