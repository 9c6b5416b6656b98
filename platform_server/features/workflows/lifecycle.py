"""Start: runs left `running` by a crash fail with a clear error; paused runs stay resumable; the timeout loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server import leases
from platform_server.features.chat import CHAT
from platform_server.features.models import LLM
from platform_server.features.settings import service as settings
from platform_server.features.workflows import WORKFLOW_SWEEP, WORKFLOW_TIMEOUTS, WORKFLOWS
from platform_server.features.workflows.engine import RESTART_ERROR, RUNS, WorkflowEngine, fail_running
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


async def start(platform: Platform) -> None:
    if leader.is_leader():  # several processes: only the leader at start (a joining process leaves the others' runs alone)
        fail_running(RESTART_ERROR)  # no run survives a restart in `running`
    engine = WorkflowEngine(platform.runtime(CHAT), platform.runtime(LLM))
    platform.set_runtime(WORKFLOWS, engine)
    loop = PauseTimeoutLoop(engine)
    platform.set_runtime(WORKFLOW_TIMEOUTS, loop)
    loop.start()
    if sweep := leases.start_sweep(platform.config, RUNS):  # several processes: a killed process's runs fail
        platform.set_runtime(WORKFLOW_SWEEP, sweep)


async def stop(platform: Platform) -> None:
    platform.runtime(WORKFLOW_TIMEOUTS).stop()
    if sweep := platform.find_runtime(WORKFLOW_SWEEP):
        sweep.stop()
    await platform.runtime(WORKFLOWS).stop()
