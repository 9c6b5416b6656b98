"""The model's view of a conversation: stored messages turned into the chat messages a model call sends."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

from platform_server.db import database
from platform_server.features.chat import sidecar, uploads
from platform_server.features.conversations.models import Conversation, Message
from platform_server.integrations.llm import ChatMessage, ToolCall
from platform_server.json_types import JsonObject, str_of

HISTORY_MESSAGES = 60
# Every model call reads this: plain SQL, only the columns the model's view needs, no model objects.
_RECENT_SQL = (
    "SELECT id, role, content, metadata, content_parts FROM message"
    " WHERE conversation_id = ? AND status != 'streaming' AND id > ? ORDER BY id DESC LIMIT ?"
)


class StoredMessage(NamedTuple):
    """What the model's view reads of a stored message (the same names as `Message`). A named tuple:
    every model call makes one per message of the history (up to HISTORY_MESSAGES)."""

    id: int
    role: str
    content: str
    metadata: JsonObject | None
    content_parts: list[JsonObject] | None


class Item(NamedTuple):
    """One chat message of the model's view and the stored row it comes from (0: none, a placeholder)."""

    row_id: int
    message: ChatMessage


@dataclass
class TurnGroup:
    """A user message with the answers and tool results that followed it: kept or compacted whole."""

    items: list[Item] = field(default_factory=list)
    rows: int = 0  # stored messages it stands for (commands and empty answers included)
    last_id: int = 0
    tokens: int = 0  # set by the context fitter


def recent_messages(conversation_db_id: int, limit: int = HISTORY_MESSAGES, after_id: int = 0) -> list[StoredMessage]:
    """The conversation's last `limit` settled messages after `after_id`, oldest first."""
    rows = database.execute_sql(_RECENT_SQL, (conversation_db_id, after_id, limit)).fetchall()
    stored = [
        StoredMessage(mid, role, content or "", json.loads(metadata) if metadata else None, json.loads(parts) if parts else None)
        for mid, role, content, metadata, parts in reversed(rows)
    ]
    return [m for m in stored if not (m.metadata or {}).get("retired")]  # earlier versions of a regenerated answer


def turn_groups(conv: Conversation, vision: bool, after_id: int = 0) -> list[TurnGroup]:
    """The last HISTORY_MESSAGES stored messages after `after_id` as the model sees them (tool results
    right after their call), grouped by the user message that began each turn."""
    rows = recent_messages(conv.id, after_id=after_id)
    while rows and rows[0].role == "tool":
        rows.pop(0)
    results = {str((m.metadata or {}).get("toolCallId")): m for m in rows if m.role == "tool"}
    groups: list[TurnGroup] = []
    for m in rows:
        command = m.role == "user" and bool((m.metadata or {}).get("command"))
        if (m.role == "user" and not command) or not groups:
            groups.append(TurnGroup())
        group = groups[-1]
        group.rows += 1
        group.last_id = m.id
        if m.role == "user" and not command:
            group.items.append(Item(m.id, ChatMessage("user", user_content(m, conv, vision))))
        elif m.role == "assistant":
            stored = (m.metadata or {}).get("toolCalls")
            calls = (
                [ToolCall(str(c["id"]), str(c["name"]), str(c.get("arguments") or "{}")) for c in stored or [] if isinstance(c, dict)]
                if isinstance(stored, list)
                else []
            )
            if not m.content and not calls:
                continue
            group.items.append(Item(m.id, ChatMessage("assistant", m.content or None, tool_calls=calls)))
            for c in calls:  # results right after their call, wherever they were stored
                found = results.get(c.id)
                text = found.content if found else "(no result: the call was interrupted)"
                group.items.append(Item(found.id if found else 0, ChatMessage("tool", text, tool_call_id=c.id, name=c.name)))
    return groups


def user_content(m: StoredMessage | Message, conv: Conversation, vision: bool) -> str | list[JsonObject]:
    """A user message's text, or its parts (images as data URLs when the model takes images)."""
    if not m.content_parts:
        return m.content
    parts: list[JsonObject] = []
    for p in m.content_parts:
        if p.get("type") == "text":
            parts.append({"type": "text", "text": p.get("text", "")})
        elif p.get("type") == "image":
            if not vision:
                parts.append({"type": "text", "text": sidecar.placeholder(m, str(p.get("url", "")))})
                continue
            url = uploads.image_data_url(conv.user_id, str(p.get("url", "")), str_of(p.get("contentType")))
            if url:
                parts.append({"type": "image", "url": url})
    return parts
