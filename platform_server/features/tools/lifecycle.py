"""Create the tool registry (`platform.runtime(TOOLS)`) with the built-in system tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.tools import TOOLS
from platform_server.features.tools.builtins import BUILTIN_TOOLS
from platform_server.features.tools.disclosure import TOOL_SEARCH
from platform_server.features.tools.registry import ToolDefinition, ToolRegistry

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    platform.set_runtime(TOOLS, ToolRegistry(timeout_s=platform.config.tool_timeout_s))


def agent_tools(platform: Platform) -> list[ToolDefinition]:
    """The built-in system tools and `tool_search`."""
    return [*BUILTIN_TOOLS, TOOL_SEARCH]
