"""The one guarded tool-call path and tool setup of an agent's turn.

Chat turns and sub-agents (and through them team runs, workflows and cron) resolve an agent's tools
with `agent_tools` and run every call through `evaluate` + `run_guarded`, so a guard change lands
everywhere at once."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from platform_server.config import Config
from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent
from platform_server.features.guard import service as guard
from platform_server.features.skills import SKILLS
from platform_server.features.skills import service as skills
from platform_server.features.tools import TOOLS
from platform_server.features.tools.registry import ToolContext, ToolOutcome, ToolRegistry
from platform_server.features.wiki import kbs
from platform_server.integrations.llm import ToolCall, ToolSpec
from platform_server.json_types import JsonObject

if TYPE_CHECKING:
    from platform_server.platform import Platform

# Offered beside the defaults to an agent bound to a knowledge base (its digest tells it to read pages).
KNOWLEDGE_TOOLS = ("wiki_search", "wiki_read")


def withheld(registry: ToolRegistry, specs: list[ToolSpec], role: str | None, end_user_id: str | None, workspace_id: int) -> dict[str, str]:
    """Tools of `specs` this caller may not run, with the reason (the registry refuses them at execution too)."""
    out: dict[str, str] = {}
    for spec in specs:
        reason = registry.refusal(spec.name, role, end_user_id, workspace_id)
        if reason is not None:
            out[spec.name] = reason
    return out


def agent_tools(
    platform: Platform,
    agent: Agent,
    user_id: int,
    workspace_id: int,
    conversation_id: str,
    end_user_id: str | None = None,
    role: str | None = None,
) -> tuple[list[ToolSpec], ToolContext]:
    """`tools_of_agent` with the platform's registry and skills key (sub-agents, team runs)."""
    runtime = platform.find_runtime(SKILLS)
    key = runtime.key if runtime is not None else None
    return tools_of_agent(platform.config, platform.runtime(TOOLS), key, agent, user_id, workspace_id, conversation_id, end_user_id, role)


def tools_of_agent(
    config: Config,
    registry: ToolRegistry,
    skills_key: bytes | None,
    agent: Agent,
    user_id: int,
    workspace_id: int,
    conversation_id: str,
    end_user_id: str | None = None,
    role: str | None = None,
) -> tuple[list[ToolSpec], ToolContext]:
    """The tools an agent is offered and the context its tool calls run in (as `role`, for `end_user_id`).

    The offer still holds tools the caller may not run (the turn says why when the model calls one);
    the held-back ones `tool_search` may add are filtered here, and the registry refuses both at execution.
    `skills_key`: the skills' secret key (None: no skill secrets in the tools' environment)."""
    bound, tools_disabled = agents.bound_tools(agent.id), bool(agent.tools_disabled)
    implied = KNOWLEDGE_TOOLS if kbs.kbs_of_agent(workspace_id, agent.id) else ()
    specs = registry.specs_for(bound, tools_disabled, implied)
    deferred = registry.deferred_for(bound, tools_disabled, implied)
    refused = withheld(registry, deferred, role, end_user_id, workspace_id)
    deferred = [s for s in deferred if s.name not in refused]

    def offer(names: list[str]) -> None:  # tool_search: held-back tools join the offer for the rest of the run
        offered = {s.name for s in specs}
        specs.extend(s for s in deferred if s.name in names and s.name not in offered)

    ctx = ToolContext(
        user_id=user_id,
        workspace_id=workspace_id,
        agent_id=agent.id,
        conversation_id=conversation_id,
        agent_dir=agents.workspace_path(config, agent.id),  # created by the tool that writes there (most turns call none)
        config=config,
        end_user_id=end_user_id,
        role=role,
        secret_env=skills.secret_env(skills_key, agent) if skills_key is not None else {},
        deferred=deferred,
        offer=offer,
    )
    return specs, ctx


def arguments_of(call: ToolCall) -> JsonObject:
    """A call's arguments as the guard sees them ({} when not a JSON object)."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def evaluate(call: ToolCall, gctx: guard.GuardContext) -> guard.Verdict:
    """The guard's verdict on one call: allow, ask or deny."""
    return guard.evaluate(call.name, arguments_of(call), gctx)


async def run_guarded(
    registry: ToolRegistry, gctx: guard.GuardContext, tool_ctx: ToolContext, call: ToolCall, verdict: guard.Verdict, refusal: str
) -> ToolOutcome:
    """Run an allowed call (any other verdict answers `refusal`) and record it in the tool-call log."""
    started = time.monotonic()
    if verdict.decision == "allow":
        outcome = await registry.execute(call.name, call.arguments, tool_ctx)
    else:
        outcome = ToolOutcome(False, refusal)
    guard.record_tool_call(gctx, call.name, call.arguments, verdict, outcome.success, int((time.monotonic() - started) * 1000), outcome.result[:500])
    return outcome
