"""Team runs: the lead plans, members work through sub-agent delegation (guarded), the lead merges.

`platform.runtime(TEAMS)` owns the background tasks. States: planning -> running -> finalizing ->
completed | partial (some member tasks failed) | failed | cancelled. When the lead's plan asks for a
review (`"review": true`), the run enters `awaiting_review` after the member tasks: the lead judges
the results and may send tasks back once with feedback before merging.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from platform_server import leases
from platform_server.db import iso, utcnow
from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.auth.service import acting_caller
from platform_server.features.models.errors import failure_text
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.teams import service
from platform_server.features.teams.board import TeamBoard
from platform_server.features.teams.models import Team, TeamRun
from platform_server.features.tools.registry import ToolError
from platform_server.features.usage import meter
from platform_server.features.workflows.catalog import extract_json
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError
from platform_server.leases import LOST_ERROR, RunKind
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest

if TYPE_CHECKING:
    from platform_server.config import Config
    from platform_server.features.models.runtime import LlmRouter
    from platform_server.features.subagents.service import SubagentManager
    from platform_server.features.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

RESTART_ERROR = "Interrupted by a server restart"
SHUTDOWN_ERROR = "Interrupted: the server stopped"
MAX_TASKS = 10
TOOL_NAME = "team_run"
TOOL_DESCRIPTION = (
    "Run your team on a goal: you plan member tasks, the members work, and you get the merged result back. Only a team's lead agent can use it."
)
TOOL_PARAMETERS = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "description": "What the team should achieve; include all needed context"},
        "teamId": {"type": "string", "description": "The team to run when this agent leads more than one"},
    },
    "required": ["goal"],
}
PLAN_INSTRUCTIONS = (
    "You lead a team. Split the goal into tasks for your members. Answer with JSON only: "
    '{"tasks": [{"agent": "<member name>", "task": "<self-contained instructions>"}], "review": false}. '
    "Set review to true when the members' results should be checked before they are merged. "
    "Use only these members:\n"
)
REVIEW_INSTRUCTIONS = (
    "You lead a team and asked to review your members' results before merging them. Answer with JSON only: "
    '{"approved": true|false, "feedback": "what must change", "redo": [<task numbers to redo>]}.'
)
MERGE_INSTRUCTIONS = "You lead a team. Merge your members' results into one final answer to the goal."


class RunFailed(Exception):
    """The run cannot go on; the text is its error."""


@dataclass
class DelegationContext:
    """What `SubagentManager.delegate` reads from a tool context."""

    user_id: int
    workspace_id: int
    agent_id: int
    conversation_id: str
    role: str | None = None  # the starter's workspace role: members' tool calls are checked against it
    end_user_id: str | None = None  # started from an end user's conversation: members act for that end user


class TeamRunner:
    """Starts, cancels and owns team runs (platform.runtime(TEAMS))."""

    def __init__(self, router: LlmRouter, subagents: SubagentManager, tools: ToolRegistry, config: Config) -> None:
        self.router = router
        self.subagents = subagents
        self.tools = tools
        self.config = config
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.board = TeamBoard()  # the teams' live board streams
        # leased while they run here (platform_server/leases.py); a swept run's end reaches the board too
        self.runs = RunKind("team-run:", service.active_ids, self._lost)

    def start(self, caller: Caller, team: Team, goal: str, conversation_id: str | None = None, end_user_id: str | None = None) -> TeamRun:
        run = TeamRun(workspace_id=team.workspace_id, team_id=team.id, user_id=caller.user_id, conversation_id=conversation_id, goal=goal)
        audit.save(caller, "CREATE", "TEAM_RUN", run, f"run of team '{team.name}'", workspace_id=team.workspace_id)
        self.board.announce(run)
        task = asyncio.get_running_loop().create_task(self._run(run.id, caller.workspace_role, end_user_id))
        self.tasks[run.id] = task
        leases.hold(self.runs, run.id)
        task.add_done_callback(lambda _t: self._forget(run.id))
        return run

    def _forget(self, run_id: int) -> None:
        self.tasks.pop(run_id, None)
        leases.release(self.runs, run_id)

    def _lost(self, ids: list[str]) -> int:
        """Runs whose process was killed (their lease lapsed): failed, saying so."""
        count = service.fail_interrupted(LOST_ERROR, [int(i) for i in ids])
        for run_id in ids:
            self._announce(int(run_id))
        return count

    def cancel(self, caller: Caller, run_id: int, reason: str | None) -> dict[str, Any]:
        run = service.mark_cancelled(caller, run_id, reason)
        self.board.announce(run)
        task = self.tasks.get(run.id)
        if task is not None and not task.done():
            task.cancel()
        return service.run_dict(run)

    async def stop(self) -> None:
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.board.close()

    # ---- the run ------------------------------------------------------------------------

    def _save(self, run_id: int, **fields: Any) -> bool:
        """Update an active run (a cancelled one keeps its final state); the board hears of the change."""
        fields["update_time"] = utcnow()
        saved = bool(TeamRun.update(**fields).where((TeamRun.id == run_id) & TeamRun.status.in_(service.ACTIVE)).execute())
        if saved:
            self._announce(run_id)
        return saved

    def _announce(self, run_id: int) -> None:
        run = TeamRun.get_or_none(TeamRun.id == run_id)
        if run is not None:
            self.board.announce(run)

    async def _run(self, run_id: int, role: str | None = None, end_user_id: str | None = None) -> None:
        run = TeamRun.get_by_id(run_id)
        meter.enter("team", run.workspace_id, run.user_id)  # planning, member runs and merging count as team
        tasks: list[dict[str, Any]] = []
        try:
            team = Team.get_by_id(run.team_id)
            lead, members = self._agents(team)
            tasks, review = await self._plan(run, lead, members)
            if not self._save(run_id, status="running", tasks=tasks):
                return
            ctx = DelegationContext(run.user_id, run.workspace_id, lead.id, run.conversation_id or f"team-{run.id}", role, end_user_id)
            for task in tasks:
                await self._work(run_id, ctx, task, tasks)
            if review and not await self._review(run, lead, ctx, tasks):
                return
            done = [t for t in tasks if t["status"] == "completed"]
            if not done:
                raise RunFailed("Every member task failed")
            if not self._save(run_id, status="finalizing"):
                return
            result = await self._merge(run, lead, tasks)
            final = "completed" if len(done) == len(tasks) else "partial"
            self._save(run_id, status=final, result=result, finished_at=utcnow())
        except asyncio.CancelledError:
            for t in tasks:
                if t["status"] in ("pending", "running"):
                    t["status"], t["finishedAt"] = "cancelled", iso(utcnow())
            if tasks:
                TeamRun.update(tasks=tasks).where(TeamRun.id == run_id).execute()
                self._announce(run_id)
            self._save(run_id, status="failed", error=SHUTDOWN_ERROR, finished_at=utcnow())
            raise
        except (RunFailed, ApiError, LlmError) as exc:
            message = failure_text(exc, f"team run {run_id}")
            self._save(run_id, status="failed", error=message, finished_at=utcnow(), **({"tasks": tasks} if tasks else {}))
        except Exception:  # noqa: BLE001 - a run must end in a state
            log.exception("team run %s failed", run_id)
            self._save(run_id, status="failed", error="Internal error", finished_at=utcnow())

    @staticmethod
    def _agents(team: Team) -> tuple[Any, list[Any]]:

        ids = [team.lead_agent_id, *(int(m) for m in team.member_agent_ids)]
        found = {a.id: a for a in Agent.select().where((Agent.workspace_id == team.workspace_id) & Agent.id.in_(ids) & (Agent.enabled == True))}  # noqa: E712
        if team.lead_agent_id not in found:
            raise RunFailed("The team's lead agent is missing or disabled")
        members = [found[i] for i in ids[1:] if i in found]
        if not members:
            raise RunFailed("The team has no enabled member agent")
        return found[team.lead_agent_id], members

    async def _ask_lead(self, lead: Any, instructions: str, user_text: str) -> str:

        prompt = agents.system_prompt(self.config, lead)
        system = (prompt + "\n\n" if prompt else "") + instructions
        targets = resolve_targets(lead.model_name or None, lead.model_provider or None, agents.provider_preferences(lead.id))
        req = ChatRequest(model="", messages=[ChatMessage("system", system), ChatMessage("user", user_text)])
        _, result = await self.router.chat(targets, req)
        return result.content or ""

    async def _review(self, run: TeamRun, lead: Any, ctx: DelegationContext, tasks: list[dict[str, Any]]) -> bool:
        """`awaiting_review`: the lead judges the results; tasks it sends back run once more with its feedback."""

        if not self._save(run.id, status="awaiting_review"):
            return False
        parts = [f"Goal: {run.goal}"] + [
            f"## Task {t['index'] + 1} ({t['agentName']}): {t['task']}\n"
            f"{t['result'] if t['status'] == 'completed' else '(failed: ' + str(t['error']) + ')'}"
            for t in tasks
        ]
        verdict = extract_json(await self._ask_lead(lead, REVIEW_INSTRUCTIONS, "\n\n".join(parts)))
        verdict = verdict if isinstance(verdict, dict) else {}
        feedback = str(verdict.get("feedback") or "").strip()[:4000]
        redo = {int(n) - 1 for n in verdict.get("redo") or [] if str(n).isdigit()} if verdict.get("approved") is not True else set()
        for task in tasks:
            task["review"] = "approved" if task["index"] not in redo else "redo"
        if not self._save(run.id, status="running" if redo else "awaiting_review", tasks=tasks):
            return False
        for task in tasks:
            if task["index"] in redo:
                task["reviewFeedback"] = feedback
                task["task"] = f"{task['task']}\n\nReviewer feedback on your previous result:\n{feedback}"
                await self._work(run.id, ctx, task, tasks)
        return True

    async def _plan(self, run: TeamRun, lead: Any, members: list[Any]) -> tuple[list[dict[str, Any]], bool]:

        roster = "\n".join(f"- {m.name}: {(m.description or '')[:200]}" for m in members)
        answer = await self._ask_lead(lead, PLAN_INSTRUCTIONS + roster, f"Goal: {run.goal}")
        plan = extract_json(answer)
        raw = plan.get("tasks") if isinstance(plan, dict) else None
        if not isinstance(raw, list) or not raw:
            raise RunFailed("The lead's plan was not a JSON object with a non-empty `tasks` list")
        by_name = {m.name.strip().lower(): m for m in members} | {str(m.id): m for m in members}
        tasks: list[dict[str, Any]] = []
        for item in raw[:MAX_TASKS]:
            name = str(item.get("agent", "")).strip().lower() if isinstance(item, dict) else ""
            text = str(item.get("task", "")).strip() if isinstance(item, dict) else ""
            agent = by_name.get(name)
            if agent is None or not text:
                raise RunFailed(f"The lead's plan names an unknown member or an empty task: {str(item)[:200]}")
            tasks.append(
                {
                    "index": len(tasks),
                    "agentId": str(agent.id),
                    "agentName": agent.name,
                    "task": text,
                    "status": "pending",
                    "result": None,
                    "error": None,
                    "startedAt": None,
                    "finishedAt": None,
                }
            )
        return tasks, isinstance(plan, dict) and plan.get("review") is True

    async def _work(self, run_id: int, ctx: DelegationContext, task: dict[str, Any], tasks: list[dict[str, Any]]) -> None:
        """One member task through the sub-agent delegation (its tool calls pass the guard)."""

        task["status"], task["startedAt"] = "running", iso(utcnow())
        if not self._save(run_id, tasks=tasks):
            raise asyncio.CancelledError()
        try:
            result = await self.subagents.delegate({"agentId": task["agentId"], "task": task["task"]}, ctx)
            task["status"], task["result"] = "completed", result
        except ToolError as exc:
            task["status"], task["error"] = "failed", str(exc)
        task["finishedAt"] = iso(utcnow())
        self._save(run_id, tasks=tasks)

    async def _merge(self, run: TeamRun, lead: Any, tasks: list[dict[str, Any]]) -> str:
        parts = [f"Goal: {run.goal}"]
        for t in tasks:
            outcome = t["result"] if t["status"] == "completed" else f"(failed: {t['error']})"
            parts.append(f"## {t['agentName']}: {t['task']}\n{outcome}")
        return await self._ask_lead(lead, MERGE_INSTRUCTIONS, "\n\n".join(parts))

    # ---- the agent tool -------------------------------------------------------------------

    async def tool(self, args: dict[str, Any], ctx: Any) -> str:
        """`team_run`: the lead's conversation starts a run of its team and waits for the merged result."""

        q = Team.select().where((Team.workspace_id == ctx.workspace_id) & (Team.lead_agent_id == ctx.agent_id) & (Team.deleted == False))  # noqa: E712
        if str(args.get("teamId") or "").isdigit():
            q = q.where(Team.id == int(args["teamId"]))
        teams = list(q.limit(2))
        if not teams:
            raise ToolError("This agent leads no team (or not the team given)")
        if len(teams) > 1:
            raise ToolError("This agent leads several teams; pass teamId")
        caller = acting_caller(ctx.user_id, ctx.workspace_id)
        if caller is None:
            raise ToolError("The conversation's user can no longer act in this workspace")
        goal = str(args.get("goal") or "").strip()[:20_000]
        if not goal:
            raise ToolError("goal must not be empty")
        run = self.start(caller, teams[0], goal, ctx.conversation_id, ctx.end_user_id)
        wait_s = max(1.0, self.tools.timeout_s - 5)
        try:
            await asyncio.wait_for(asyncio.shield(self.tasks.get(run.id) or asyncio.sleep(0)), wait_s)
        except asyncio.TimeoutError:
            return f"Team run {run.id} is still running; see GET /api/v1/team-runs/{run.id}."
        run = TeamRun.get_by_id(run.id)
        if run.status in ("completed", "partial"):
            return run.result or ""
        raise ToolError(f"Team run {run.id} ended {run.status}: {run.error or run.cancel_reason or ''}".strip())


def check_goal(goal: str) -> str:
    text = goal.strip()
    if not text:
        raise BadRequest("goal: must not be blank")
    return text
