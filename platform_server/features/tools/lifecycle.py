"""Create the tool registry (`platform.runtime(TOOLS)`) with the built-in system tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.tools import TOOLS
from platform_server.features.tools.builtins import BUILTIN_TOOLS
from platform_server.features.tools.disclosure import TOOL_SEARCH
from platform_server.features.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    registry = ToolRegistry(timeout_s=platform.config.tool_timeout_s)
    for definition in (*BUILTIN_TOOLS, TOOL_SEARCH):
        registry.register(definition)
    platform.set_runtime(TOOLS, registry)
