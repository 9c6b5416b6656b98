"""Delegation: an agent hands a task to another agent of the workspace through the `delegate_to_agent` tool."""

from __future__ import annotations

import asyncio
import contextvars
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from platform_server import leases
from platform_server.db import database, utcnow
from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.chat import tool_calls
from platform_server.features.conversations.service import key_for
from platform_server.features.guard import service as guard
from platform_server.features.guard.service import GuardContext
from platform_server.features.models.errors import failure_text
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.subagents.models import SpawnPause, SubagentRun
from platform_server.features.tools.registry import ToolContext, ToolError, ToolRegistry
from platform_server.features.wiki import retrieval
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError, ToolCall
from platform_server.integrations.llm.tokens import ESTIMATE
from platform_server.leases import LOST_ERROR, RunKind
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import Forbidden, NotFound

if TYPE_CHECKING:
    from platform_server.config import Config
    from platform_server.features.chat.runtime import ChatRuntime
    from platform_server.features.models.runtime import LlmRouter
    from platform_server.platform import Platform

TOOL_NAME = "delegate_to_agent"
MAX_DEPTH = 2
TOOL_PARAMETERS = {
    "type": "object",
    "properties": {
        "agentName": {"type": "string", "description": "Name of the agent to delegate to"},
        "agentId": {"type": "string", "description": "Id of the agent (instead of agentName)"},
        "task": {"type": "string", "description": "What the other agent should do; include all context it needs"},
    },
    "required": ["task"],
}
TOOL_DESCRIPTION = "Delegate a self-contained task to another agent of this workspace and get its final answer back."
REFUSED_IN_SUBAGENT = "needs approval, which a sub-agent cannot ask for"

_depth: contextvars.ContextVar[int] = contextvars.ContextVar("subagent_depth", default=0)


@dataclass
class SubagentManager:
    """The running delegations of this process (platform.runtime(SUBAGENTS))."""

    chat: ChatRuntime
    router: LlmRouter
    tools: ToolRegistry
    config: Config
    # only handed on: the chat area's tool set-up and the wiki's turn retrieval take the platform (their signatures are theirs)
    platform: Platform
    tasks: dict[str, asyncio.Task[str]] = field(default_factory=dict)
    interrupted: set[str] = field(default_factory=set)

    async def delegate(self, args: dict[str, Any], ctx: Any) -> str:
        """Tool entry point: run the task on the target agent and return its answer."""

        depth = _depth.get() + 1
        if depth > MAX_DEPTH:
            raise ToolError(f"Delegation is limited to {MAX_DEPTH} levels")
        if is_paused(ctx.user_id, ctx.conversation_id):
            raise ToolError("Spawning sub-agents is paused for this conversation")
        agent = _target_agent(ctx.workspace_id, args)
        run = SubagentRun.create(
            subagent_id=secrets.token_hex(8),
            workspace_id=ctx.workspace_id,
            user_id=ctx.user_id,
            conversation_id=ctx.conversation_id,
            parent_agent_id=ctx.agent_id,
            agent_id=agent.id,
            agent_name=agent.name,
            task=str(args["task"])[:20_000],
            depth=depth,
        )
        self._announce(ctx, run, "started")
        task = asyncio.get_running_loop().create_task(self._run(agent, run, depth, ctx))
        self.tasks[run.subagent_id] = task
        leases.hold(RUNS, run.id)
        try:
            result = await task
            status = "completed"
        except asyncio.CancelledError:
            if run.subagent_id not in self.interrupted:
                SubagentRun.update(status="interrupted", finished_at=utcnow()).where(SubagentRun.id == run.id).execute()
                raise  # the parent turn itself was stopped
            result, status = "The sub-agent was interrupted before it finished.", "interrupted"
        except LlmError as exc:
            result, status = f"The sub-agent failed: {failure_text(exc, 'sub-agent run')}", "failed"
        finally:
            self.tasks.pop(run.subagent_id, None)
            self.interrupted.discard(run.subagent_id)
            leases.release(RUNS, run.id)
        SubagentRun.update(status=status, result=result[:20_000], finished_at=utcnow()).where(SubagentRun.id == run.id).execute()
        self._announce(ctx, run, status)
        if status != "completed":
            raise ToolError(result)
        return result

    def interrupt(self, subagent_id: str) -> bool:
        task = self.tasks.get(subagent_id)
        if task is None or task.done():
            return False
        self.interrupted.add(subagent_id)
        task.cancel()
        return True

    def _announce(self, ctx: Any, run: SubagentRun, status: str) -> None:

        turn = self.chat.turns.get(key_for(ctx.user_id, ctx.conversation_id))
        if turn is not None and turn.running:
            turn.publish(
                "phase",
                {"phase": "subagent", "subagentId": run.subagent_id, "agentId": str(run.agent_id), "agentName": run.agent_name, "status": status},
            )

    async def _run(self, agent: Any, run: SubagentRun, depth: int, ctx: Any) -> str:
        """A react loop for the delegated agent (non-streamed; its tool calls pass the guard too)."""

        _depth.set(depth)
        config = self.config
        router = self.router
        registry = self.tools
        targets = resolve_targets(agent.model_name or None, agent.model_provider or None, agents.provider_preferences(agent.id))
        # the calling turn's role and end user: a sub-agent can do no more than its caller could
        role, end_user_id = getattr(ctx, "role", None), getattr(ctx, "end_user_id", None)
        specs, tool_ctx = tool_calls.agent_tools(
            self.platform, agent, ctx.user_id, ctx.workspace_id, ctx.conversation_id, end_user_id=end_user_id, role=role
        )
        withheld = tool_calls.withheld(registry, specs, role, end_user_id, ctx.workspace_id)
        specs = [s for s in specs if s.name not in withheld]
        offered = {s.name: "" for s in specs} | withheld  # name -> why it is refused ("" = it may run)
        gctx = guard.GuardContext(ctx.user_id, ctx.workspace_id, agent.id, ctx.conversation_id)
        # a delegated agent with knowledge bases gets their digest and the passages for its task, as a chat turn does
        knowledge = await retrieval.for_turn(self.platform, agent.workspace_id, agent.id, run.task, ESTIMATE.count)
        system = "\n\n".join(p for p in (agents.system_prompt(config, agent), knowledge.prompt) if p)
        messages = [ChatMessage("system", system), ChatMessage("user", run.task)]
        for _ in range(max(1, agent.max_iterations or 10)):
            _, result = await router.chat(targets, ChatRequest(model="", messages=messages, tools=specs))
            if not result.tool_calls:
                return result.content or ""
            messages.append(ChatMessage("assistant", result.content or None, tool_calls=result.tool_calls))
            for call in result.tool_calls:
                messages.append(ChatMessage("tool", await _call(registry, gctx, tool_ctx, call, offered), tool_call_id=call.id, name=call.name))
        return f"Stopped after reaching the maximum of {agent.max_iterations} iterations."


async def _call(registry: ToolRegistry, gctx: GuardContext, tool_ctx: ToolContext, call: ToolCall, offered: dict[str, str]) -> str:
    """A sub-agent's tool call: the chat path's guard, without pausing (an `ask` is refused)."""
    if call.name not in offered:
        return f"Tool '{call.name}' is not available to this agent"
    if offered[call.name]:
        return offered[call.name]
    verdict = tool_calls.evaluate(call, gctx)
    reason = REFUSED_IN_SUBAGENT if verdict.decision == "ask" else verdict.reason
    outcome = await tool_calls.run_guarded(registry, gctx, tool_ctx, call, verdict, f"Refused by the tool guard: {call.name} {reason}")
    return outcome.result


def _target_agent(workspace_id: int, args: dict[str, Any]) -> Any:

    q = Agent.select().where((Agent.workspace_id == workspace_id) & (Agent.enabled == True))  # noqa: E712
    if str(args.get("agentId") or "").isdigit():
        agent = q.where(Agent.id == int(args["agentId"])).first()
    elif args.get("agentName"):
        agent = q.where(Agent.name == str(args["agentName"])).first()
    else:
        raise ToolError("agentName or agentId is required")
    if agent is None:
        raise ToolError("No enabled agent with that name or id in this workspace")
    return agent


# ---- routes' service -----------------------------------------------------------------------


def is_paused(user_id: int, conversation_id: str) -> bool:
    row = SpawnPause.get_or_none((SpawnPause.user_id == user_id) & (SpawnPause.conversation_id == conversation_id))
    return bool(row and row.paused)


def set_paused(caller: Caller, conversation_id: str, paused: bool) -> dict[str, Any]:
    with database.atomic():
        SpawnPause.insert(user_id=caller.user_id, conversation_id=conversation_id, paused=paused, update_time=utcnow()).on_conflict(
            conflict_target=[SpawnPause.user_id, SpawnPause.conversation_id], update={SpawnPause.paused: paused, SpawnPause.update_time: utcnow()}
        ).execute()
        audit.record(caller, "UPDATE", "SUBAGENT_SPAWN_PAUSE", conversation_id, f"paused={paused}")
    return {"conversationId": conversation_id, "paused": paused}


to_dict = Fields(
    subagentId="subagent_id",
    conversationId="conversation_id",
    agentId=ident("agent_id"),
    agentName="agent_name",
    parentAgentId=ident("parent_agent_id"),
    task="task",
    depth="depth",
    status="status",
    result="result",
    createTime=when("create_time"),
    finishedAt=when("finished_at"),
)


def active(user_id: int, conversation_id: str) -> list[dict[str, Any]]:
    q = SubagentRun.select().where(
        (SubagentRun.user_id == user_id) & (SubagentRun.conversation_id == conversation_id) & (SubagentRun.status == "running")
    )
    return [to_dict(r) for r in q.order_by(SubagentRun.id)]


def owned_run(user_id: int | None, subagent_id: str) -> SubagentRun:
    """The run; Forbidden when user_id is given and is not the parent conversation's owner."""
    run = SubagentRun.get_or_none(SubagentRun.subagent_id == subagent_id)
    if run is None:
        raise NotFound("Sub-agent not found")
    if user_id is not None and run.user_id != user_id:
        raise Forbidden("Not the owner of this sub-agent's conversation")
    return run


def _running_runs() -> list[str]:
    return [str(r.id) for r in SubagentRun.select(SubagentRun.id).where(SubagentRun.status == "running")]


def interrupt_lost(ids: list[str]) -> int:
    """Delegations whose process was killed (their lease lapsed): interrupted, saying why."""
    query = SubagentRun.update(status="interrupted", result=LOST_ERROR, finished_at=utcnow())
    return int(query.where(SubagentRun.id.in_([int(i) for i in ids]) & (SubagentRun.status == "running")).execute())


RUNS = RunKind("subagent-run:", _running_runs, interrupt_lost)  # leased while they run here (platform_server/leases.py)


def mark_interrupted_at_start() -> int:
    """After a restart no delegation is still running."""
    return SubagentRun.update(status="interrupted", finished_at=utcnow()).where(SubagentRun.status == "running").execute()
