"""Register the delegation tool; no delegation survives a restart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server import leases
from platform_server.features.chat import CHAT
from platform_server.features.models import LLM
from platform_server.features.subagents import SUBAGENT_SWEEP, SUBAGENTS, service
from platform_server.features.tools import TOOLS
from platform_server.features.tools.registry import ToolDefinition
from platform_server.ports import leader

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    if leader.is_leader():  # several processes: only the leader at start (a joining process leaves the others' runs alone)
        service.mark_interrupted_at_start()
    manager = service.SubagentManager(platform.runtime(CHAT), platform.runtime(LLM), platform.runtime(TOOLS), platform.config, platform)
    platform.set_runtime(SUBAGENTS, manager)
    if sweep := leases.start_sweep(platform.config, service.RUNS):  # several processes: a killed process's delegations end
        platform.set_runtime(SUBAGENT_SWEEP, sweep)


def agent_tools(platform: Platform) -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name=service.TOOL_NAME,
            description=service.TOOL_DESCRIPTION,
            parameters=service.TOOL_PARAMETERS,
            run=platform.runtime(SUBAGENTS).delegate,
            source="subagent",
        )
    ]


async def stop(platform: Platform) -> None:
    if sweep := platform.find_runtime(SUBAGENT_SWEEP):
        sweep.stop()
    for task in list(platform.runtime(SUBAGENTS).tasks.values()):
        task.cancel()
