"""What a turn resolves once per user input: the models to try, the tools offered, limits, the system prompt."""

from __future__ import annotations

from dataclasses import dataclass, field

from platform_server.config import Config
from platform_server.db import first_where
from platform_server.features.agents import files
from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent
from platform_server.features.chat import tool_calls
from platform_server.features.chat.turns import Turn
from platform_server.features.conversations.models import Conversation
from platform_server.features.goals import service as goals
from platform_server.features.memory import store as memory
from platform_server.features.models import capabilities
from platform_server.features.models.runtime import ModelTarget, resolve_targets
from platform_server.features.skills import service as skills
from platform_server.features.tools.registry import ToolContext, ToolRegistry
from platform_server.integrations.llm import ToolSpec
from platform_server.json_types import JsonObject
from platform_server.web.context import Caller

MEMORY_CAP = 16_000


@dataclass
class TurnSetup:
    """What a turn resolves once: model targets, tools, limits."""

    targets: list[ModelTarget]
    vision: bool
    specs: list[ToolSpec]
    tool_ctx: ToolContext
    max_iterations: int
    thinking_level: str | None
    system_prompt: str = ""
    withheld: dict[str, str] = field(default_factory=dict)  # tool name -> why this caller may not use it
    citations: list[JsonObject] = field(default_factory=list)  # the knowledge passages in the system prompt


def resolve(
    config: Config,
    tools: ToolRegistry,
    skills_key: bytes | None,
    turn: Turn,
    caller: Caller,
    agent: Agent,
    conv: Conversation,
    thinking_level: str | None,
    end_user_id: str | None,
    conv_current: bool = False,
) -> TurnSetup:
    """The setup of one user input; `conv_current`: `conv` was read at the turn's start, with no await since."""
    if not conv_current:  # a queued input: the conversation may have changed since the turn began
        conv = first_where(Conversation, id=conv.id) or Conversation.get_by_id(conv.id)
    preferences = agents.provider_preferences(agent.id)
    if conv.model_provider and conv.model_name:
        targets = resolve_targets(conv.model_name, conv.model_provider, preferences)
    else:
        targets = resolve_targets(agent.model_name or None, getattr(agent, "model_provider", None) or None, preferences)
    role = caller.workspace_role
    specs, tool_ctx = tool_calls.tools_of_agent(
        config, tools, skills_key, agent, turn.user_id, turn.workspace_id, turn.conversation_id, end_user_id=end_user_id, role=role
    )
    withheld = tool_calls.withheld(tools, specs, role, end_user_id, turn.workspace_id)
    specs[:] = [spec for spec in specs if spec.name not in withheld]  # in place: tool_search extends this list
    if not any("tools" in capabilities.of_target(t) for t in targets):
        specs.clear()  # a model that cannot call tools (the embedded demo) gets none: their schemas would fill its window
    tool_ctx.emit = turn.publish  # tools that report progress (acp_delegate) stream into the turn
    return TurnSetup(
        targets=targets,
        vision="image" in (targets[0].modalities or ""),
        specs=specs,
        tool_ctx=tool_ctx,
        max_iterations=max(1, int(agent.max_iterations or 10)),
        thinking_level=thinking_level or agent.default_thinking_level,
        system_prompt=system_prompt(config, agent, conv),
        withheld=withheld,
    )


def system_prompt(config: Config, agent: Agent, conv: Conversation) -> str:
    """The agent's prompt (with prompt files), memory, skills and the conversation's goal, built once per answer."""
    prompt = agents.system_prompt(config, agent)
    remembered = memory_text(config, agent.id, conv.end_user_id, conv.user_id)
    extras = (
        f"## Memory\n\n{remembered}" if remembered else "",
        skills.prompt_for_agent(config, agent),
        goals.context_for(conv.user_id, conv.conversation_id) or "",
    )  # the KBs' digest and passages: `knowledge.add`
    return "\n\n".join(part for part in (prompt, *extras) if part)


def memory_text(config: Config, agent_id: int, end_user_id: str | None, user_id: int) -> str:
    """The agent's shared notes (its MEMORY.md, or the end user's) and this user's own memory of the agent."""
    rel = f"memory/users/{agents.end_user_key(end_user_id)}/MEMORY.md" if end_user_id else "MEMORY.md"
    # confined like every workspace file: a symlink is never followed, and only the cap is read
    shared = (files.read_text_capped(agents.workspace_path(config, agent_id), rel, MEMORY_CAP * 4) or "").strip()
    own = memory.prompt_text(config, agent_id, user_id, end_user_id)
    return "\n\n".join(p for p in (shared[:MEMORY_CAP], own) if p)[:MEMORY_CAP]
