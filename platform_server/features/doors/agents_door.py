"""What both doors share: the agents a token's user may chat with, across their workspaces, and one turn run to its end.

A client of the OpenAI API or of MCP knows no workspace: an agent is named by a stable id (`<name-slug>-<agentId>`,
resolved by the number after the last dash, so a renamed agent keeps answering to its old id) and the turn runs in
the agent's workspace with the caller's role there, the same `viewer` floor as `/api/v1/chat/stream`. An
`X-Workspace-Id` header narrows everything to that one workspace (403 when the user is not a member of it).
"""

from __future__ import annotations

import contextvars
import hashlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent
from platform_server.features.chat import CHAT
from platform_server.features.chat.runtime import TurnRequest
from platform_server.features.workspaces import service as workspaces
from platform_server.ports.events import Subscription
from platform_server.web.context import ROLE_RANK, Caller, Principal
from platform_server.web.errors import ApiError, Forbidden

if TYPE_CHECKING:
    from platform_server.features.chat.turns import Turn
    from platform_server.platform import Platform

CHAT_ROLE = "viewer"  # the role /api/v1/chat/stream requires
_SLUG = re.compile(r"[^a-z0-9]+")
APPROVAL_NOTE = (
    "\n\n[The tool call {tool} is waiting for approval in the console's Approvals. Once it is approved or denied there, "
    "send your next message to continue.]"
)


# The token's user (and the workspace an X-Workspace-Id header narrows to) of the MCP request being served: set by
# the HTTP handler around the SDK's call; the SDK's tasks for the request inherit it (contextvars copy on task start).
DOOR_CALLER: contextvars.ContextVar[tuple[Principal, int | None] | None] = contextvars.ContextVar("door_caller", default=None)


class ModelNotFound(ApiError):
    """An agent id that is unknown, disabled, or in a workspace the caller may not chat in (never told apart)."""

    code = 404
    default_msg = "Agent not found"


def model_id(agent: Agent) -> str:
    slug = _SLUG.sub("-", (agent.name or "").lower()).strip("-")[:40] or "agent"
    return f"{slug}-{agent.id}"


def agent_number(text: str) -> int | None:
    """The agent id in a model id (`assistant-123`, `123`), or None."""
    tail = text.strip().rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() and 0 < int(tail) < 2**63 else None


def workspace_roles(principal: Principal, only: int | None) -> dict[int, str]:
    """The caller's effective role in each of their workspaces (or in `only`, 403 when not a member)."""
    caller = Caller(principal, only or 1, None)
    roles = {int(ws["id"]): str(ws["effectiveRole"]) for ws in workspaces.list_for(caller) if ws.get("effectiveRole")}
    if only is not None:
        if only not in roles:
            raise Forbidden("Not a member of this workspace")
        return {only: roles[only]}
    return roles


def chat_roles(principal: Principal, only: int | None) -> dict[int, str]:
    return {ws: role for ws, role in workspace_roles(principal, only).items() if ROLE_RANK[role] >= ROLE_RANK[CHAT_ROLE]}


def listable_agents(principal: Principal, only: int | None) -> list[Agent]:
    """Enabled agents of every workspace where the caller may chat, oldest first (a stable order for pickers)."""
    roles = chat_roles(principal, only)
    if not roles:
        return []
    query = Agent.select().where(Agent.workspace_id.in_(list(roles)) & (Agent.enabled == True))  # noqa: E712
    return list(query.order_by(Agent.workspace_id, Agent.id))


def caller_for(principal: Principal, model: str, only: int | None) -> tuple[Caller, Agent]:
    """The caller acting in the agent's workspace and the agent to chat with; ModelNotFound otherwise."""
    number = agent_number(model)
    row = Agent.get_or_none(Agent.id == number) if number is not None else None
    if row is None:
        raise ModelNotFound(f"The model '{model}' does not exist or you do not have access to it")
    roles = chat_roles(principal, only)
    role = roles.get(int(row.workspace_id))
    if role is None or not row.enabled:
        raise ModelNotFound(f"The model '{model}' does not exist or you do not have access to it")
    caller = Caller(principal, int(row.workspace_id), role)
    return caller, agents.get_agent_for_chat(caller, int(row.id))


def conversation_id(prefix: str, key: str) -> str:
    """A conversation id for a client's own thread key (any text): stable, short, valid as an id."""
    return f"{prefix}-{hashlib.sha256(key.encode('utf-8', 'replace')).hexdigest()[:32]}"


@dataclass
class Outcome:
    """How a turn ended, as the doors report it."""

    status: str = "completed"
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    text: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)


async def start(
    platform: Platform, caller: Caller, agent: Agent, conversation: str, message: str, source: str, parts: list[dict[str, Any]] | None = None
) -> Turn:
    """Start a turn through the chat runtime (guard, grants, memory, retrieval, usage under `source`)."""
    runtime = platform.runtime(CHAT)
    await runtime.pacer.admit()
    return runtime.start_turn(
        TurnRequest(
            caller=caller,
            agent=agent,
            conversation_id=conversation,
            message=None if parts else message,
            content_parts=parts,
            source=source,
            text_commands=True,  # the token's owner: `/approve` and `/deny` decide a waiting call, as in the console
        )
    )


async def pieces(subscription: Subscription, outcome: Outcome) -> AsyncIterator[str]:
    """The answer's text as it streams (from `turn.subscribe(0)`); `outcome` is filled in when the turn ends. An
    approval wait ends the text with a sentence that says where the call is decided. Closing the subscription (the
    client went) ends it early; the turn runs on."""
    waiting_tool: str | None = None
    last_tool: str | None = None
    try:
        events = list(subscription.replay)
        while True:
            if not events:
                event = await subscription.next()
                if event is None:
                    break
                events.append(event)
            event = events.pop(0)
            data = event.data if isinstance(event.data, dict) else {}
            if event.name == "content_delta" and data.get("delta"):
                outcome.text += str(data["delta"])
                yield str(data["delta"])
            elif event.name == "tool_call_started":
                last_tool = str(data.get("toolName") or "")
            elif event.name == "tool_approval_requested":
                waiting_tool = str(data.get("toolName") or "") or last_tool
            elif event.name == "phase" and data.get("phase") == "awaiting_approval":
                waiting_tool = waiting_tool or last_tool
            elif event.name == "citations":
                outcome.citations = list(data.get("citations") or [])
            elif event.name == "error":
                outcome.error = str(data.get("message") or "The turn failed")
            elif event.name == "done":
                outcome.status = str(data.get("status") or "completed")
                outcome.prompt_tokens = int(data.get("promptTokens") or 0)
                outcome.completion_tokens = int(data.get("completionTokens") or 0)
                break
    finally:
        subscription.close()
    if outcome.status == "awaiting_approval":
        note = APPROVAL_NOTE.format(tool=f"'{waiting_tool}'" if waiting_tool else "of this answer")
        outcome.text += note
        yield note
