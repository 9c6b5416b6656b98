"""Start: no team run stays active across a restart; the runner and the `team_run` agent tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server import leases
from platform_server.features.models import LLM
from platform_server.features.subagents import SUBAGENTS
from platform_server.features.teams import TEAM_SWEEP, TEAMS, runner, service
from platform_server.features.tools import TOOLS
from platform_server.features.tools.registry import ToolDefinition
from platform_server.ports import leader

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    if leader.is_leader():  # several processes: only the leader at start (a joining process leaves the others' runs alone)
        service.fail_interrupted(runner.RESTART_ERROR)
    team_runner = runner.TeamRunner(platform.runtime(LLM), platform.runtime(SUBAGENTS), platform.runtime(TOOLS), platform.config)
    platform.set_runtime(TEAMS, team_runner)
    if sweep := leases.start_sweep(platform.config, team_runner.runs):  # several processes: a killed process's runs fail
        platform.set_runtime(TEAM_SWEEP, sweep)


def agent_tools(platform: Platform) -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name=runner.TOOL_NAME,
            description=runner.TOOL_DESCRIPTION,
            parameters=runner.TOOL_PARAMETERS,
            run=platform.runtime(TEAMS).tool,
            source="team",
            feature="team_runs",
        )
    ]


async def stop(platform: Platform) -> None:
    if sweep := platform.find_runtime(TEAM_SWEEP):
        sweep.stop()
    await platform.runtime(TEAMS).stop()
