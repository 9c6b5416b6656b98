"""Workflows: graphs of agent steps, their runs, approvals and the engine that executes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.workflows.engine import WorkflowEngine
    from platform_server.loops import Loop


WORKFLOWS: RuntimeKey[WorkflowEngine] = RuntimeKey("workflows")
WORKFLOW_TIMEOUTS: RuntimeKey[Loop] = RuntimeKey("workflow_timeouts")
WORKFLOW_SWEEP: RuntimeKey[Loop] = RuntimeKey("workflow_sweep")  # several processes: the leader fails a dead process's runs
