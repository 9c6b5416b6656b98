"""Workflow runs: background tasks that walk a published graph, persisting every step.

`platform.runtime(WORKFLOWS)` owns the tasks. A run follows one path from `start`; each node
becomes a step row (status, input, output, error, timings). Approval nodes, and agent turns whose
tool call waits for approval, pause the run with a `pauseToken` until `resume`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Coroutine

from platform_server import leases
from platform_server.db import database, utcnow
from platform_server.features.agents import service as agents
from platform_server.features.audit import service as audit
from platform_server.features.auth.service import acting_caller
from platform_server.features.chat.runtime import TurnRequest
from platform_server.features.chat.service import wait_result
from platform_server.features.guard import service as guard
from platform_server.features.models.errors import failure_text
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.usage import meter
from platform_server.features.workflows import graph, service
from platform_server.features.workflows.models import WorkflowRevision, WorkflowRun, WorkflowStep
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError
from platform_server.leases import LOST_ERROR, RunKind
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, Conflict, Forbidden

if TYPE_CHECKING:
    from platform_server.features.chat.runtime import ChatRuntime
    from platform_server.features.models.runtime import LlmRouter

log = logging.getLogger(__name__)

RESTART_ERROR = "Interrupted by a server restart"
SHUTDOWN_ERROR = "Interrupted: the server stopped"
ACTIVE = ("running", "paused")


def fail_running(error: str, ids: list[int] | None = None) -> int:
    """Runs left `running` (of `ids`, or all) by a process that stopped: each and its running step fail with `error`."""
    now = utcnow()
    with database.atomic():
        query = WorkflowRun.select(WorkflowRun.id).where(WorkflowRun.status == "running")
        found = [r.id for r in (query if ids is None else query.where(WorkflowRun.id.in_(ids)))]
        if not found:
            return 0
        WorkflowStep.update(status="failed", error=error, finished_at=now).where(
            WorkflowStep.run_id.in_(found) & (WorkflowStep.status == "running")
        ).execute()
        WorkflowRun.update(status="failed", error=error, finished_at=now, update_time=now).where(WorkflowRun.id.in_(found)).execute()
    return len(found)


def _running_runs() -> list[str]:
    return [str(r.id) for r in WorkflowRun.select(WorkflowRun.id).where(WorkflowRun.status == "running")]


# leased while a task here walks them (platform_server/leases.py); a paused run has no task and no lease
RUNS = RunKind("workflow-run:", _running_runs, lambda ids: fail_running(LOST_ERROR, [int(i) for i in ids]))


class StepError(Exception):
    """An expected step failure; its text becomes the step's and the run's error."""


class RunEnded(Exception):
    """The run already reached its final state inside a step (nothing more to record)."""


@dataclass
class NodeResult:
    output: Any = None
    branch: str | None = None
    pause: dict[str, Any] | None = None  # {"message", "deadline", ...}: the run pauses on this step


class WorkflowEngine:
    """Starts, resumes and owns workflow runs (platform.runtime(WORKFLOWS))."""

    def __init__(self, chat: ChatRuntime, router: LlmRouter) -> None:
        self.chat = chat
        self.router = router
        self.tasks: dict[int, asyncio.Task[None]] = {}

    # ---- public API ----------------------------------------------------------------

    def start_run(self, caller: Caller, workflow_id: int, run_input: Any) -> dict[str, Any]:
        """Create a run of the latest revision and start it in the background."""
        workflow, rev = service.startable(caller, workflow_id)
        start = next(n["id"] for n in rev.graph["nodes"] if n["type"] == "start")
        now = utcnow()
        with database.atomic():
            run = WorkflowRun.create(
                workflow_id=workflow.id,
                revision_id=rev.id,
                workspace_id=workflow.workspace_id,
                user_id=caller.user_id,
                input=run_input,
                context={"nodes": {start: run_input}},
            )
            WorkflowStep.create(
                run_id=run.id,
                seq=1,
                node_id=start,
                node_type="start",
                status="succeeded",
                input=run_input,
                output=run_input,
                started_at=now,
                finished_at=now,
            )
            audit.record(caller, "CREATE", "WORKFLOW_RUN", run.id, f"run of workflow '{workflow.name}' v{rev.version}")
        self._spawn(run.id, self._walk(run.id, start, None))
        return service.run_dict(run)

    def resume(self, caller: Caller, run_id: int, outcome: str, token: str | None, payload: Any) -> dict[str, Any]:
        """Resume a paused run with an outcome: its starter or a workspace admin, with the current pause token."""
        run = service.get_run_row(caller, run_id)
        if not service.may_resume(caller, run):
            raise Forbidden("Only the user who started the run or a workspace admin may resume it")
        if run.status != "paused":
            raise Conflict(f"Workflow run is {run.status}, not paused")
        # no token matches no pause (the document's pauseToken is optional: which pause is current is the run's state)
        if token is None or token != run.pause_token:
            raise Conflict("pauseToken does not match the run's current pause")
        return self._resume(run, outcome, payload, caller)

    def expire_pauses(self) -> int:
        """Resume, with outcome `timeout`, every paused run whose deadline has passed (the loop's tick)."""
        due = WorkflowRun.select().where((WorkflowRun.status == "paused") & (WorkflowRun.pause_deadline <= utcnow()))
        count = 0
        for run in list(due):
            try:
                self._resume(run, "timeout", None, None)
                count += 1
            except Conflict:
                continue
        return count

    async def stop(self) -> None:
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---- state changes ----------------------------------------------------------------

    def _spawn(self, run_id: int, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks[run_id] = task
        leases.hold(RUNS, run_id)
        task.add_done_callback(lambda t: self._forget(run_id, t))

    def _forget(self, run_id: int, task: asyncio.Task[None]) -> None:
        if self.tasks.get(run_id) is task:
            self.tasks.pop(run_id)
            leases.release(RUNS, run_id)  # (a resume's new task holds it again under the same name)

    def _resume(self, run: WorkflowRun, outcome: str, payload: Any, actor: Caller | None) -> dict[str, Any]:
        with database.atomic():
            changed = (
                WorkflowRun.update(status="running", pause_token=None, pause_deadline=None, update_time=utcnow())
                .where((WorkflowRun.id == run.id) & (WorkflowRun.status == "paused") & (WorkflowRun.pause_token == run.pause_token))
                .execute()
            )
            if not changed:
                raise Conflict("Workflow run is no longer paused")
            audit.record(actor, "UPDATE", "WORKFLOW_RUN", run.id, f"resumed with outcome {outcome}", workspace_id=run.workspace_id)
        step = WorkflowStep.get_by_id(run.paused_step_id)
        resumed_by = str(actor.user_id) if actor else None
        self._spawn(run.id, self._walk(run.id, step.node_id, None, (step, outcome, payload, resumed_by)))
        return service.run_dict(WorkflowRun.get_by_id(run.id))

    def _begin_step(self, run: WorkflowRun, node: dict[str, Any]) -> WorkflowStep:
        seq = WorkflowStep.select().where(WorkflowStep.run_id == run.id).count() + 1
        return WorkflowStep.create(run_id=run.id, seq=seq, node_id=node["id"], node_type=node["type"])

    def _end_step(
        self, run_id: int, step: WorkflowStep, status: str, output: Any = None, error: str | None = None, outcome: str | None = None
    ) -> None:
        with database.atomic():
            step.status, step.output, step.error, step.finished_at = status, output, error, utcnow()
            step.outcome = outcome or step.outcome
            step.save()
            if status == "succeeded":
                run = WorkflowRun.get_by_id(run_id)
                context = dict(run.context or {})
                context.setdefault("nodes", {})[step.node_id] = output
                WorkflowRun.update(context=context, update_time=utcnow()).where(WorkflowRun.id == run_id).execute()

    def _pause(self, run_id: int, step: WorkflowStep, pause: dict[str, Any]) -> None:
        deadline = pause.pop("deadline", None)
        with database.atomic():
            step.status, step.output = "paused", pause
            step.save()
            WorkflowRun.update(
                status="paused", pause_token=secrets.token_urlsafe(12), paused_step_id=step.id, pause_deadline=deadline, update_time=utcnow()
            ).where(WorkflowRun.id == run_id).execute()

    @staticmethod
    def _finish_run(run_id: int, status: str, output: Any = None, error: str | None = None) -> None:
        now = utcnow()
        WorkflowRun.update(status=status, output=output, error=error, finished_at=now, update_time=now, pause_token=None, pause_deadline=None).where(
            (WorkflowRun.id == run_id) & (WorkflowRun.status.in_(ACTIVE))
        ).execute()

    # ---- walking the graph -----------------------------------------------------------------

    async def _walk(self, run_id: int, node_id: str, branch: str | None, resume: tuple[WorkflowStep, str, Any, str | None] | None = None) -> None:
        """From `node_id` (just finished with `branch`), run nodes until the run ends or pauses."""
        step: WorkflowStep | None = None
        try:
            run = WorkflowRun.get_by_id(run_id)
            g = WorkflowRevision.get_by_id(run.revision_id).graph
            nodes = {n["id"]: n for n in g["nodes"]}
            if resume is not None:
                step = resume[0]
                result = await self._resume_step(run, step, nodes[step.node_id], *resume[1:])
                if result.pause:
                    self._pause(run_id, step, result.pause)
                    return
                self._end_step(run_id, step, "succeeded", result.output, outcome=result.branch)
                branch, step = result.branch, None
            while True:
                current = nodes[node_id]
                nxt = graph.next_node(g, node_id, current["type"], branch)
                if nxt is None:
                    self._no_edge(run_id, current, branch)
                    return
                node_id, node = nxt, nodes[nxt]
                run = WorkflowRun.get_by_id(run_id)
                step = self._begin_step(run, node)
                result = await self._execute(run, step, node)
                if result.pause:
                    self._pause(run_id, step, result.pause)
                    return
                self._end_step(run_id, step, "succeeded", result.output, outcome=result.branch)
                step = None
                if node["type"] == "end":
                    self._finish_run(run_id, "succeeded", output=result.output)
                    return
                branch = result.branch
        except RunEnded:
            return
        except asyncio.CancelledError:
            self._fail(run_id, step, SHUTDOWN_ERROR)
            raise
        except (StepError, ApiError) as exc:
            self._fail(run_id, step, exc.msg if isinstance(exc, ApiError) else str(exc))
        except Exception:  # noqa: BLE001 - a run must end in a state, never hang in `running`
            log.exception("workflow run %s failed", run_id)
            self._fail(run_id, step, "Internal error")

    def _fail(self, run_id: int, step: WorkflowStep | None, error: str) -> None:
        if step is not None:
            self._end_step(run_id, step, "failed", step.output if step.status == "paused" else None, error)
            error = f"Step '{step.node_id}' failed: {error}"
        self._finish_run(run_id, "failed", error=error)

    def _no_edge(self, run_id: int, node: dict[str, Any], branch: str | None) -> None:
        if node["type"] == "approval" and branch == "cancelled":
            self._finish_run(run_id, "cancelled", error=f"Approval '{node['id']}' was cancelled")
        elif node["type"] == "approval":
            self._finish_run(run_id, "failed", error=f"Approval '{node['id']}' ended with outcome '{branch}'")
        else:
            self._finish_run(run_id, "failed", error=f"No edge from '{node['id']}' for branch '{branch}'")

    # ---- nodes -------------------------------------------------------------------------------

    async def _execute(self, run: WorkflowRun, step: WorkflowStep, node: dict[str, Any]) -> NodeResult:
        meter.enter("workflow", run.workspace_id, run.user_id)  # the run task's model calls count as workflow
        config, outputs = node.get("config") or {}, (run.context or {}).get("nodes", {})

        def text(key: str) -> str:
            return graph.render(config.get(key), run.input, outputs)

        kind = node["type"]
        if kind == "end":
            if config.get("output") is not None:
                return NodeResult(output=text("output"))
            last = (
                WorkflowStep.select()
                .where((WorkflowStep.run_id == run.id) & (WorkflowStep.seq < step.seq) & WorkflowStep.node_type.in_(("agent", "llm")))
                .order_by(WorkflowStep.seq.desc())
                .first()
            )
            return NodeResult(output=outputs.get(last.node_id) if last else run.input)
        if kind == "condition":
            left, op, right = text("left"), str(config.get("op")), text("right")
            self._record_input(step, {"left": left, "op": op, "right": right})
            try:
                value = graph.evaluate(op, left, right)
            except ValueError as exc:
                raise StepError(failure_text(exc, "workflow step")) from None
            return NodeResult(output=value, branch="true" if value else "false")
        if kind == "approval":
            timeout = config.get("timeoutSeconds")
            deadline = utcnow() + timedelta(seconds=int(timeout)) if timeout else None
            return NodeResult(pause={"kind": "approval", "message": text("message"), "deadline": deadline})
        if kind == "llm":
            return await self._llm(step, config, text("prompt"), text("system"))
        if kind == "agent":
            return await self._agent(run, step, config, text("message"))
        raise StepError(f"Unknown node type '{kind}'")

    @staticmethod
    def _record_input(step: WorkflowStep, value: Any, conversation_id: str | None = None) -> None:
        step.input = value
        step.conversation_id = conversation_id or step.conversation_id
        step.save()

    async def _llm(self, step: WorkflowStep, config: dict[str, Any], prompt: str, system: str) -> NodeResult:

        self._record_input(step, {"prompt": prompt, "system": system or None})
        messages = ([ChatMessage("system", system)] if system else []) + [ChatMessage("user", prompt)]
        targets = resolve_targets(config.get("modelName") or None, config.get("modelProvider") or None, [])
        try:
            target, result = await self.router.chat(targets, ChatRequest(model="", messages=messages))
        except LlmError as exc:
            raise StepError(failure_text(exc, "workflow step")) from None
        return NodeResult(output=result.content or "")

    def _acting_caller(self, run: WorkflowRun) -> Caller:

        caller = acting_caller(run.user_id, run.workspace_id)
        if caller is None:
            raise StepError("The user who started the run can no longer act in this workspace")
        return caller

    async def _agent(self, run: WorkflowRun, step: WorkflowStep, config: dict[str, Any], message: str) -> NodeResult:

        caller = self._acting_caller(run)
        agent_id = graph.agent_id_of(config)
        if agent_id is None:
            raise StepError("agentId must be an agent id")
        agent = agents.get_agent_for_chat(caller, agent_id)
        if not message.strip():
            raise StepError("The agent message rendered empty")
        cid = f"wf-{run.id}-{step.seq}"
        self._record_input(step, {"agentId": str(agent.id), "agentName": agent.name, "message": message}, cid)
        return await self._turn(caller, agent, cid, message)

    async def _turn(self, caller: Caller, agent: Any, cid: str, message: str, command: str | None = None) -> NodeResult:
        """One chat turn through the runtime (every tool call passes the guard).

        The rendered message is never a command: only `command` (the resumer's checked decision) resolves a call."""

        turn = self.chat.start_turn(TurnRequest(caller=caller, agent=agent, conversation_id=cid, message=message, source="workflow", command=command))
        result = await wait_result(turn)
        if result["status"] == "awaiting_approval":
            pending = guard.pending_for(caller.user_id, cid)
            tool = pending[0].get("toolName") if pending else None
            return NodeResult(
                pause={
                    "kind": "tool_approval",
                    "conversationId": cid,
                    "toolName": tool,
                    "message": f"The agent's call of tool '{tool}' needs approval",
                }
            )
        if result["status"] != "completed":
            raise StepError(f"The agent's turn ended with status {result['status']}")
        return NodeResult(output=result["content"])

    async def _resume_step(
        self, run: WorkflowRun, step: WorkflowStep, node: dict[str, Any], outcome: str, payload: Any, resumed_by: str | None
    ) -> NodeResult:
        """Finish the paused step with the outcome: an approval's branch, or the agent's pending tool call."""
        if node["type"] == "approval":
            output = {"outcome": outcome, "payload": payload, "resumedBy": resumed_by, "message": (step.output or {}).get("message")}
            return NodeResult(output=output, branch=outcome)

        caller = self._acting_caller(run)
        cid = step.conversation_id or ""
        if outcome in ("timeout", "cancelled"):
            guard.deny_all_pending(caller.user_id, cid, caller.user_id, reason=f"workflow run {outcome}")
            if outcome == "cancelled":
                self._end_step(run.id, step, "cancelled", step.output, "Cancelled while waiting for approval", outcome)
                self._finish_run(run.id, "cancelled", error=f"Cancelled while '{step.node_id}' waited for approval")
                raise RunEnded()
            raise StepError("The tool call's approval timed out")
        if not guard.pending_for(caller.user_id, cid):
            raise StepError("The agent's tool call is no longer waiting for approval")
        agent = agents.get_agent_for_chat(caller, int((step.input or {}).get("agentId") or 0))
        decision = "approved" if outcome == "approved" else "denied"
        return await self._turn(caller, agent, cid, "/approve" if outcome == "approved" else "/deny", decision)
