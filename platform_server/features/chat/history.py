"""The model's view of a conversation: stored messages turned into the chat messages a model call sends."""

from __future__ import annotations

from typing import Any

from platform_server.db import fetch_models
from platform_server.features.chat import sidecar, uploads
from platform_server.features.conversations.models import Conversation, Message
from platform_server.integrations.llm import ChatMessage, ToolCall

HISTORY_MESSAGES = 60
# Every model call reads this (plain SQL: peewee would build the same query again each time).
_RECENT_SQL = "SELECT * FROM message WHERE conversation_id = ? AND status != 'streaming' ORDER BY id DESC LIMIT ?"


def llm_messages(data_dir: str, conv: Conversation, vision: bool, system_prompt: str) -> list[ChatMessage]:
    """The system prompt, then the last HISTORY_MESSAGES stored messages (tool results right after their call)."""
    rows = fetch_models(Message, _RECENT_SQL, (conv.id, HISTORY_MESSAGES))[::-1]
    while rows and rows[0].role == "tool":
        rows.pop(0)
    out: list[ChatMessage] = [ChatMessage("system", system_prompt)] if system_prompt else []
    results = {str((m.metadata or {}).get("toolCallId")): m for m in rows if m.role == "tool"}
    for m in rows:
        if m.role == "user" and not (m.metadata or {}).get("command"):
            out.append(ChatMessage("user", user_content(data_dir, m, conv, vision)))
        elif m.role == "assistant":
            calls = [ToolCall(c["id"], c["name"], c.get("arguments") or "{}") for c in (m.metadata or {}).get("toolCalls", [])]
            if not m.content and not calls:
                continue
            out.append(ChatMessage("assistant", m.content or None, tool_calls=calls))
            for c in calls:  # results right after their call, wherever they were stored
                found = results.get(c.id)
                text = found.content if found else "(no result: the call was interrupted)"
                out.append(ChatMessage("tool", text, tool_call_id=c.id, name=c.name))
    return out


def user_content(data_dir: str, m: Message, conv: Conversation, vision: bool) -> str | list[dict[str, Any]]:
    """A user message's text, or its parts (images as data URLs when the model takes images)."""
    if not m.content_parts:
        return m.content
    parts: list[dict[str, Any]] = []
    for p in m.content_parts:
        if p.get("type") == "text":
            parts.append({"type": "text", "text": p.get("text", "")})
        elif p.get("type") == "image":
            if not vision:
                parts.append({"type": "text", "text": sidecar.placeholder(m, str(p.get("url", "")))})
                continue
            url = uploads.image_data_url(data_dir, conv.user_id, p.get("url", ""), p.get("contentType"))
            if url:
                parts.append({"type": "image", "url": url})
    return parts
