"""Start: runs left `running` by a crash fail with a clear error; paused runs stay resumable; the timeout loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.db import database, utcnow
from platform_server.features.chat import CHAT
from platform_server.features.models import LLM
from platform_server.features.settings import service as settings
from platform_server.features.workflows import WORKFLOW_TIMEOUTS, WORKFLOWS
from platform_server.features.workflows.engine import RESTART_ERROR, WorkflowEngine
from platform_server.features.workflows.models import WorkflowRun, WorkflowStep
from platform_server.loops import Loop
from platform_server.ports import leader

if TYPE_CHECKING:
    from platform_server.platform import Platform


class PauseTimeoutLoop(Loop):
    """Resume paused runs whose approval deadline passed with outcome `timeout`."""

    interval_s = 15.0

    def __init__(self, engine: WorkflowEngine) -> None:
        super().__init__()
        self.engine = engine

    def tick(self) -> int:
        if not settings.is_enabled("workflows"):
            return 0
        return self.engine.expire_pauses()


def fail_interrupted() -> int:
    """No run survives a restart in `running`: it and its running step fail with RESTART_ERROR."""
    now = utcnow()
    with database.atomic():
        ids = [r.id for r in WorkflowRun.select(WorkflowRun.id).where(WorkflowRun.status == "running")]
        if not ids:
            return 0
        WorkflowStep.update(status="failed", error=RESTART_ERROR, finished_at=now).where(
            WorkflowStep.run_id.in_(ids) & (WorkflowStep.status == "running")
        ).execute()
        WorkflowRun.update(status="failed", error=RESTART_ERROR, finished_at=now, update_time=now).where(WorkflowRun.id.in_(ids)).execute()
    return len(ids)


async def start(platform: Platform) -> None:
    if leader.is_leader():  # several processes: only the leader at start (a joining process leaves the others' runs alone)
        fail_interrupted()
    engine = WorkflowEngine(platform.runtime(CHAT), platform.runtime(LLM))
    platform.set_runtime(WORKFLOWS, engine)
    loop = PauseTimeoutLoop(engine)
    platform.set_runtime(WORKFLOW_TIMEOUTS, loop)
    loop.start()


async def stop(platform: Platform) -> None:
    platform.runtime(WORKFLOW_TIMEOUTS).stop()
    await platform.runtime(WORKFLOWS).stop()
