"""Sub-agents: a turn delegating a task to another agent, the running delegations and their routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.subagents.service import SubagentManager


SUBAGENTS: RuntimeKey[SubagentManager] = RuntimeKey("subagents")
