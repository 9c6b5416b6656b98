"""Chat requests: validation, starting or re-attaching to a turn, and piping its events to a client."""
from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from platform_server.features.chat.runtime import ChatRuntime, TurnRequest
from platform_server.features.chat.turns import Turn
from platform_server.features.conversations import service as conversations
from platform_server.web.context import Caller
from platform_server.features.models.errors import LlmFailure
from platform_server.web.errors import BadRequest, parse_long

ThinkingLevel = Literal["off", "low", "medium", "high", "max"]


class ContentPart(BaseModel):
    type: Literal["text", "image"]
    text: str | None = Field(default=None, max_length=200_000)
    url: str | None = None
    contentType: str | None = Field(default=None, max_length=100)


class ChatStreamRequest(BaseModel):
    agentId: str | None = None
    message: str | None = Field(default=None, max_length=200_000)
    contentParts: list[ContentPart] | None = Field(default=None, max_length=20)
    conversationId: str = "default"
    reconnect: bool | None = None
    lastEventId: str | None = None
    thinkingLevel: ThinkingLevel | None = None
    modelProvider: str | None = Field(default=None, max_length=100)
    modelName: str | None = Field(default=None, max_length=200)
    endUserId: str | None = Field(default=None, max_length=128)

    @model_validator(mode="after")
    def _rules(self) -> "ChatStreamRequest":
        if self.message is not None and self.contentParts:
            # the original console sends the text twice (message and a text part): the parts win
            self.message = None
        if not self.reconnect:
            if self.message is None and not self.contentParts:
                raise ValueError("message or contentParts is required")
            if self.message is not None and not self.message.strip():
                raise ValueError("message must not be blank")
            if not self.agentId:
                raise ValueError("agentId is required")
        if bool(self.modelProvider) != bool(self.modelName):
            raise ValueError("modelProvider and modelName come together")
        return self


class SyncChatRequest(BaseModel):
    agentId: str | None = None
    message: str = Field(min_length=1, max_length=200_000)
    conversationId: str = "default"
    thinkingLevel: ThinkingLevel | None = None
    endUserId: str | None = Field(default=None, max_length=128)


class InterruptRequest(BaseModel):
    message: str | None = Field(default=None, max_length=200_000)
    contentParts: list[ContentPart] | None = Field(default=None, max_length=20)

    @model_validator(mode="after")
    def _one(self) -> "InterruptRequest":
        if (self.message is None or not self.message.strip()) and not self.contentParts:
            raise ValueError("message or contentParts is required")
        return self


def parts_of(parts: list[ContentPart] | None) -> list[dict[str, Any]] | None:
    return None if parts is None else [p.model_dump(exclude_none=True) for p in parts]


def begin_turn(runtime: ChatRuntime, config: Any, caller: Caller, agent_id_text: str, message: str | None,
               parts: list[dict[str, Any]] | None, conversation_id: str, thinking_level: str | None = None,
               model_provider: str | None = None, model_name: str | None = None,
               end_user_id: str | None = None, source: str = "web") -> Turn:
    """Resolve the agent and conversation (owner only) and start a new turn."""
    from platform_server.features.agents import service as agents

    cid = conversations.validate_id(conversation_id)
    agent = agents.get_agent_for_chat(caller, parse_long("agentId", agent_id_text))
    return runtime.start_turn(TurnRequest(
        caller=caller, agent=agent, conversation_id=cid, message=message, content_parts=parts,
        thinking_level=thinking_level, model_provider=model_provider, model_name=model_name,
        end_user_id=end_user_id, source=source, text_commands=True,  # the authenticated owner, console or API
    ))


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
    from platform_server.features.conversations.models import Message

    assert turn.task is not None
    await asyncio.shield(turn.task)
    result = turn.result
    if result.status == "failed":
        raise LlmFailure(result.error or "The model call failed")
    content = ""
    if result.assistant_message_id:
        row = Message.get_or_none(Message.id == int(result.assistant_message_id))
        content = row.content if row else ""
    return {
        "conversationId": turn.conversation_id, "content": content,
        "assistantMessageId": result.assistant_message_id, "status": result.status,
        "promptTokens": result.prompt_tokens, "completionTokens": result.completion_tokens,
        "toolCalls": result.tool_calls,
    }
