"""Tools: the Tool table, the runtime registry, the built-in system tools and the /api/v1/tools routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.tools.registry import ToolRegistry


TOOLS: RuntimeKey[ToolRegistry] = RuntimeKey("tools")
