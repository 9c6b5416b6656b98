"""Sub-agents: a turn delegating a task to another agent, the running delegations and their routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.subagents.service import SubagentManager
    from platform_server.loops import Loop


SUBAGENTS: RuntimeKey[SubagentManager] = RuntimeKey("subagents")
SUBAGENT_SWEEP: RuntimeKey[Loop] = RuntimeKey("subagent_sweep")  # several processes: the leader ends a dead process's delegations
