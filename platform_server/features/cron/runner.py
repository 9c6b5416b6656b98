"""Scheduled runs: the scheduler loop and the runner that executes a job's turn as the job's owner."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, cast

from platform_server import leases
from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.auth.models import User
from platform_server.features.chat.runtime import TurnRequest
from platform_server.features.cron.events import render
from platform_server.features.cron.models import CronJob, CronRun, Trigger, TriggerEvent
from platform_server.features.cron.schedule import next_fire
from platform_server.features.workspaces import service as workspaces
from platform_server.features.workspaces.models import Workspace
from platform_server.ids import next_id
from platform_server.leases import LOST_ERROR, RunKind
from platform_server.loops import Loop
from platform_server.ports import leader
from platform_server.web.context import ROLE_RANK, Caller, Principal
from platform_server.web.errors import ApiError, Conflict

if TYPE_CHECKING:
    from platform_server.features.chat.runtime import ChatRuntime
    from platform_server.features.workflows.engine import WorkflowEngine

log = logging.getLogger(__name__)

EVENT_DEDUPE = dt.timedelta(hours=24)  # an event id seen within this window is answered, not re-run
RESULT_STATUS = {"completed": "succeeded", "awaiting_approval": "awaiting_approval"}
JOB_TYPES = {"cron_job": CronJob, "trigger": Trigger}


def _running_runs() -> list[str]:
    return [str(r.id) for r in CronRun.select(CronRun.id).where(CronRun.status == "running")]


def fail_lost(ids: list[str]) -> int:
    """Runs whose process was killed (their lease lapsed): failed, saying so (a later fire of the job is not held up)."""
    return int(
        CronRun.update(status="failed", finished_at=utcnow(), error=LOST_ERROR)
        .where(CronRun.id.in_([int(i) for i in ids]) & (CronRun.status == "running"))
        .execute()
    )


RUNS = RunKind("cron-run:", _running_runs, fail_lost)  # leased while they run here (platform_server/leases.py)


class RunRefused(Exception):
    """A run that cannot act as its owner (access lost, agent gone or disabled)."""


@dataclass(frozen=True)
class RunSpec:
    """What a run needs, copied from its cron job or trigger when it starts."""

    job_type: str  # cron_job | trigger
    job_id: int
    job_name: str
    workspace_id: int
    owner_user_id: int
    agent_id: int
    message: str
    conversation_mode: str  # new | fixed
    conversation_id: str | None
    target_type: str = "agent"  # agent | workflow (a trigger's target)
    target_id: int | None = None
    payload: dict[str, Any] | None = None  # the event that fired it (a workflow run's input)

    @property
    def key(self) -> tuple[str, int]:
        return (self.job_type, self.job_id)


def spec_of(row: CronJob | Trigger, message: str | None = None, payload: dict[str, Any] | None = None) -> RunSpec:
    workflow = isinstance(row, Trigger) and row.target_type == "workflow"
    return RunSpec(
        target_type="workflow" if workflow else "agent",
        target_id=row.target_id if workflow else None,
        payload=payload,
        job_type="trigger" if isinstance(row, Trigger) else "cron_job",
        job_id=row.id,
        job_name=row.name,
        workspace_id=row.workspace_id,
        owner_user_id=row.owner_user_id,
        agent_id=row.agent_id,
        message=row.message if message is None else message,
        conversation_mode=row.conversation_mode,
        conversation_id=row.conversation_id,
    )


def owner_caller(user_id: int, workspace_id: int) -> Caller:
    """The job owner as a caller in the job's workspace; RunRefused when they lost access."""

    if not Workspace.select().where(Workspace.id == workspace_id).exists():
        raise RunRefused("The job's workspace no longer exists")
    user = User.get_or_none(User.id == user_id)
    if user is None or user.deleted:
        raise RunRefused("The job's owner no longer exists")
    if not user.enabled:
        raise RunRefused("The job's owner is disabled")
    role = "owner" if user.role == "admin" else workspaces.member_role(user.id, workspace_id)
    if ROLE_RANK.get(role or "", 0) < ROLE_RANK["member"]:
        raise RunRefused("The job's owner no longer has member access to the workspace")
    principal = Principal(user_id=user.id, username=user.username, role=user.role, token_kind="cron", nickname=user.nickname)
    return Caller(principal, workspace_id, role)


def run_agent(spec: RunSpec) -> Any:

    agent = Agent.get_or_none((Agent.id == spec.agent_id) & (Agent.workspace_id == spec.workspace_id))
    if agent is None:
        raise RunRefused("Agent not found")
    if not agent.enabled:
        raise RunRefused("Agent is disabled")
    return agent


class CronScheduler(Loop):
    """Fires due cron jobs and cron triggers (platform.runtime(CRON)) and owns every run task.

    State lives in SQLite (each job's next fire instant), so a restart neither loses nor repeats a
    fire; a job whose fire times passed while the server was down fires once, then moves on.
    """

    interval_s = 15.0

    def __init__(self, chat: ChatRuntime, workflows: WorkflowEngine | None = None, clock: Callable[[], dt.datetime] = utcnow) -> None:
        super().__init__()
        self.chat = chat
        self.workflows = workflows  # (the workflow triggers' target; absent when that area is not started)
        self.clock = clock
        self._active: dict[tuple[str, int], asyncio.Task[None]] = {}

    # ---- state ---------------------------------------------------------------------

    def is_active(self, job_type: str, job_id: int) -> bool:
        task = self._active.get((job_type, job_id))
        return task is not None and not task.done()

    def recover(self) -> None:
        """At start: runs left running by a stopped process failed; enabled jobs get a next fire time."""
        now = self.clock()
        if leader.is_leader():  # several processes: only the leader at start (a joining process leaves the others' runs alone)
            with database.atomic():
                CronRun.update(status="failed", finished_at=now, error="Interrupted: the server restarted").where(
                    CronRun.status == "running"
                ).execute()
        for model in (CronJob, Trigger):
            query = model.select().where((model.enabled == True) & model.next_fire_at.is_null())  # noqa: E712
            if model is Trigger:
                query = query.where(Trigger.type == "cron")
            for row in query:
                model.update(next_fire_at=self.safe_next(row, now)).where(model.id == row.id).execute()

    @staticmethod
    def safe_next(row: CronJob | Trigger, after: dt.datetime) -> dt.datetime | None:
        try:
            return next_fire(cast(str, row.cron_expression), cast(str, row.timezone), after)
        except Exception:  # noqa: BLE001 - a zone that vanished from tzdata must not stop the loop
            log.exception("cannot compute the next fire time of %s %s", type(row).__name__, row.id)
            return None

    # ---- the loop --------------------------------------------------------------------

    async def tick(self, now: dt.datetime | None = None) -> list[int]:
        """Start a run for every job due at `now` (naive UTC); returns the run ids started."""
        now = now or self.clock()
        started: list[int] = []
        for model in (CronJob, Trigger):
            due = model.select().where(
                (model.enabled == True) & model.next_fire_at.is_null(False) & (model.next_fire_at <= now)  # noqa: E712
            )
            if model is Trigger:
                due = due.where(Trigger.type == "cron")
            for row in list(due.order_by(model.next_fire_at)):
                run_id = self._fire(model, row, now)
                if run_id is not None:
                    started.append(run_id)
        TriggerEvent.delete().where(TriggerEvent.received_at < now - EVENT_DEDUPE).execute()
        return started

    def _fire(self, model: type[CronJob] | type[Trigger], row: Any, now: dt.datetime) -> int | None:
        due_at = row.next_fire_at
        with database.atomic():
            # compare-and-set: a concurrent update or toggle of the job wins over this fire
            moved = model.update(next_fire_at=self.safe_next(row, now)).where((model.id == row.id) & (model.next_fire_at == due_at)).execute()
        if not moved:
            return None
        spec = spec_of(row, render(row.message, None) if isinstance(row, Trigger) else None)
        if self.is_active(*spec.key):
            log.info("%s %s is still running; the fire due at %s is skipped", spec.job_type, spec.job_id, due_at)
            return None
        return self.begin(spec, "schedule", scheduled_at=due_at).id

    # ---- runs --------------------------------------------------------------------------

    def begin(self, spec: RunSpec, cause: str, scheduled_at: dt.datetime | None = None, event_id: str | None = None) -> CronRun:
        """Record a running run and start it in the background; 409 when the job already runs (a state, not input)."""
        if self.is_active(*spec.key):
            raise Conflict("This job already has a running run")
        run_id = next_id()
        prefix = "cron" if spec.job_type == "cron_job" else "trigger"
        cid = spec.conversation_id if spec.conversation_mode == "fixed" else f"{prefix}-{run_id}"
        if spec.target_type == "workflow":
            cid = None  # a workflow run keeps its own record (GET /api/v1/workflows/runs/...)
        now = utcnow()
        with database.atomic():
            run = CronRun.create(
                id=run_id,
                workspace_id=spec.workspace_id,
                job_type=spec.job_type,
                job_id=spec.job_id,
                job_name=spec.job_name,
                agent_id=spec.agent_id,
                owner_user_id=spec.owner_user_id,
                cause=cause,
                scheduled_at=scheduled_at,
                started_at=now,
                conversation_id=cid,
                event_id=event_id,
            )
            model = JOB_TYPES[spec.job_type]
            model.update(last_fire_at=now).where(model.id == spec.job_id).execute()
        task = asyncio.get_running_loop().create_task(self._execute(run_id, spec, cid))
        self._active[spec.key] = task
        leases.hold(RUNS, run_id)
        task.add_done_callback(lambda t: self._forget(spec.key, t, run_id))
        return run

    def _forget(self, key: tuple[str, int], task: asyncio.Task[None], run_id: int) -> None:
        leases.release(RUNS, run_id)
        if self._active.get(key) is task:
            del self._active[key]

    async def _execute(self, run_id: int, spec: RunSpec, conversation_id: str | None) -> None:

        try:
            caller = owner_caller(spec.owner_user_id, spec.workspace_id)
            if spec.target_type == "workflow":
                self._start_workflow(run_id, spec, caller)
                return
            agent = run_agent(spec)
            runtime = self.chat
            if conversation_id is None:
                raise RunRefused("The chat runtime is not running")
            turn = runtime.start_turn(
                TurnRequest(
                    caller=caller,
                    agent=agent,
                    conversation_id=conversation_id,
                    message=spec.message,
                    source="cron",
                )
            )
            assert turn.task is not None
            await asyncio.shield(turn.task)
            result = turn.result
            status = RESULT_STATUS.get(str(result.status), "failed")
            error = None
            if status == "failed":
                error = result.error or ("The turn was stopped" if result.status == "stopped" else "The turn failed")
            message_id = result.assistant_message_id
            self._finish(
                run_id,
                status,
                error,
                assistant_message_id=int(message_id) if message_id else None,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
            )
        except RunRefused as exc:
            self._finish(run_id, "failed", str(exc))
        except ApiError as exc:
            self._finish(run_id, "failed", exc.msg)
        except asyncio.CancelledError:
            self._finish(run_id, "failed", "Interrupted: the server stopped")
            raise
        except Exception:  # noqa: BLE001 - every failure is recorded on the run
            log.exception("cron run %s failed", run_id)
            self._finish(run_id, "failed", "Internal error")

    def _start_workflow(self, run_id: int, spec: RunSpec, caller: Caller) -> None:
        """A workflow trigger's fire: a run of the workflow's published revision with the event as input;
        the cron run succeeds once the workflow run started (its own record tracks the rest)."""
        engine = self.workflows
        if engine is None or spec.target_id is None:
            raise RunRefused("The workflow engine is not running")
        run_input = spec.payload if spec.payload is not None else {"trigger": spec.job_name}
        engine.start_run(caller, spec.target_id, run_input)
        self._finish(run_id, "succeeded", None)

    @staticmethod
    def _finish(run_id: int, status: str, error: str | None, **fields: Any) -> None:
        CronRun.update(status=status, error=(error or None) and error[:2000], finished_at=utcnow(), **fields).where(CronRun.id == run_id).execute()

    async def drain(self) -> None:
        """Wait for every run in flight (tests; shutdown)."""
        while pending := [t for t in self._active.values() if not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    async def close(self) -> None:
        self.stop()
        for task in list(self._active.values()):
            task.cancel()
        await self.drain()
