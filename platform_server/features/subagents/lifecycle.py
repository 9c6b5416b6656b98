"""Register the delegation tool; no delegation survives a restart."""
from __future__ import annotations

from typing import Any

from platform_server.features.subagents import service


async def start(platform: Any) -> None:
    from platform_server.features.tools.registry import ToolDefinition

    service.mark_interrupted_at_start()
    manager = service.SubagentManager(platform)
    platform.services["subagents"] = manager
    platform.services["tools"].register(ToolDefinition(
        name=service.TOOL_NAME, description=service.TOOL_DESCRIPTION, parameters=service.TOOL_PARAMETERS,
        run=manager.delegate, source="subagent",
    ))


async def stop(platform: Any) -> None:
    manager = platform.services.pop("subagents", None)
    if manager is not None:
        for task in list(manager.tasks.values()):
            task.cancel()
