"""Teams: agents that work on one task together, team runs and the `team_run` tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.teams.runner import TeamRunner
    from platform_server.loops import Loop


TEAMS: RuntimeKey[TeamRunner] = RuntimeKey("teams")
TEAM_SWEEP: RuntimeKey[Loop] = RuntimeKey("team_sweep")  # several processes: the leader fails a dead process's runs
