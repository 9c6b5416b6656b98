"""Chat requests: validation, starting or re-attaching to a turn, and piping its events to a client."""

from __future__ import annotations

import asyncio
from typing import Any

from platform_server.features.chat.runtime import ChatRuntime, TurnRequest
from platform_server.features.chat.schemas import ContentPart
from platform_server.features.chat.turns import Turn
from platform_server.features.conversations import service as conversations
from platform_server.web.context import Caller
from platform_server.features.models.errors import LlmFailure
from platform_server.web.errors import BadRequest, parse_long
from platform_server.features.agents import service as agents
from platform_server.features.conversations.models import Message


def parts_of(parts: list[ContentPart] | None) -> list[dict[str, Any]] | None:
    return None if parts is None else [p.model_dump(exclude_none=True) for p in parts]


def begin_turn(
    runtime: ChatRuntime,
    config: Any,
    caller: Caller,
    agent_id_text: str,
    message: str | None,
    parts: list[dict[str, Any]] | None,
    conversation_id: str,
    thinking_level: str | None = None,
    model_provider: str | None = None,
    model_name: str | None = None,
    end_user_id: str | None = None,
    source: str = "web",
) -> Turn:
    """Resolve the agent and conversation (owner only) and start a new turn."""

    cid = conversations.validate_id(conversation_id)
    agent = agents.get_agent_for_chat(caller, parse_long("agentId", agent_id_text))
    return runtime.start_turn(
        TurnRequest(
            caller=caller,
            agent=agent,
            conversation_id=cid,
            message=message,
            content_parts=parts,
            thinking_level=thinking_level,
            model_provider=model_provider,
            model_name=model_name,
            end_user_id=end_user_id,
            source=source,
            text_commands=True,  # the authenticated owner, console or API
        )
    )


def reattach(runtime: ChatRuntime, caller: Caller, conversation_id: str) -> Turn | None:
    """The turn to replay for the conversation's owner, or None when nothing is buffered."""
    cid = conversations.validate_id(conversation_id)
    conversations.check_owner(caller.user_id, cid)
    return runtime.turns.get(conversations.key_for(caller.user_id, cid))


def parse_last_event_id(raw: str | None) -> int:
    if raw is None or raw == "":
        return 0
    if not raw.strip().isdigit():
        raise BadRequest("Invalid value for parameter 'lastEventId': expected Long")
    return int(raw.strip())


async def wait_result(turn: Turn) -> dict[str, Any]:
    """Wait for a turn (synchronous chat) and shape its result."""

    assert turn.task is not None
    await asyncio.shield(turn.task)
    result = turn.result
    if result.status == "failed":
        raise LlmFailure(result.error or "The model call failed")
    content = ""
    citations: list[dict[str, Any]] = []
    if result.assistant_message_id:
        row = Message.get_or_none(Message.id == int(result.assistant_message_id))
        content = row.content if row else ""
        citations = ((row.metadata or {}).get("citations") or []) if row else []
    return {
        "conversationId": turn.conversation_id,
        "content": content,
        "assistantMessageId": result.assistant_message_id,
        "status": result.status,
        "promptTokens": result.prompt_tokens,
        "completionTokens": result.completion_tokens,
        "toolCalls": result.tool_calls,
        "citations": citations,  # the knowledge passages the answer was given (see the stream's `citations` event)
    }
