"""Start: no team run stays active across a restart; the runner and the `team_run` agent tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.teams import runner, service
from platform_server.features.tools.registry import ToolDefinition

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:

    service.fail_interrupted(runner.RESTART_ERROR)
    team_runner = runner.TeamRunner(platform)
    platform.services.teams = team_runner
    platform.services.tools.register(
        ToolDefinition(
            name=runner.TOOL_NAME,
            description=runner.TOOL_DESCRIPTION,
            parameters=runner.TOOL_PARAMETERS,
            run=team_runner.tool,
            source="team",
            feature="team_runs",
        )
    )


async def stop(platform: Platform) -> None:
    await platform.services.teams.stop()
