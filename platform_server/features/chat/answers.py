"""The assistant message a turn writes, and the turn's hot writes, as plain SQL.

A turn's start stores the user's message with its first answer's row in one commit; the answer's text
is saved as it streams (`save_answer`), and the final text with the turn's end (see `ChatRuntime._finish`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from platform_server.db import database, insert_row, stored_time, update_row, utcnow
from platform_server.features.chat.turns import Turn
from platform_server.features.conversations.models import Conversation, Message

# A stored message counted on its conversation (the hot write of every turn, as plain SQL).
_COUNT_MESSAGE = "UPDATE conversation SET message_count = message_count + 1, last_active_time = ?, update_time = ? WHERE id = ?"
_COUNT_MESSAGE_WITH_PREVIEW = (
    "UPDATE conversation SET message_count = message_count + 1, last_active_time = ?, update_time = ?, last_message = ? WHERE id = ?"
)
# A turn's start: its two messages counted, the conversation running (one statement)
START_SQL = (
    "UPDATE conversation SET message_count = message_count + ?, last_active_time = ?, update_time = ?, "
    "last_message = COALESCE(?, last_message), stream_status = 'running', agent_id = ?, workspace_id = ?, "
    "model_provider = ?, model_name = ? WHERE id = ?"
)
MESSAGES_OF = "SELECT COUNT(*) FROM message WHERE conversation_id = ?"
DELETE_MESSAGE = "DELETE FROM message WHERE id = ?"
_UNCOUNT_MESSAGE = "UPDATE conversation SET message_count = message_count - 1 WHERE id = ?"


@dataclass
class Answer:
    """The assistant message being produced (kept so a stop or failure can save the partial text)."""

    row_id: int
    conversation_db_id: int
    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    runtime_model: str | None = None
    runtime_provider: str | None = None
    persisted_at: float = field(default_factory=time.monotonic)  # the loop's clock: first saved a period after it began
    unsaved: str | None = None  # the status to store it with when the turn ends (the final answer: one commit with the turn's end)
    announced: bool = False  # its message_complete event went out


def add_message(conv: Conversation, role: str, content: str, **fields: Any) -> int:
    """Store a message and count it on its conversation; returns the message id (hot: plain SQL)."""
    now = fields.pop("now", None) or utcnow()
    row_id: int = insert_row(Message, conversation=conv.id, role=role, content=content, create_time=now, **fields)
    preview = content.strip().replace("\n", " ")[:200]
    stamp = stored_time(now)
    if preview:
        database.execute_sql(_COUNT_MESSAGE_WITH_PREVIEW, (stamp, stamp, preview, conv.id))
    else:
        database.execute_sql(_COUNT_MESSAGE, (stamp, stamp, conv.id))
    conv.message_count += 1
    return row_id


def save_answer(answer: Answer, status: str, **conversation: Any) -> None:
    """Store the answer as it stands (one commit) with the conversation's preview (and `conversation`'s
    other columns, in the same statement)."""
    answer.unsaved = None
    metadata: dict[str, Any] = {}
    if answer.tool_calls:
        metadata["toolCalls"] = answer.tool_calls
    if answer.reasoning:
        metadata["reasoning"] = answer.reasoning
    preview = answer.content.strip().replace("\n", " ")[:200]
    with database.atomic():  # one commit
        update_row(
            Message,
            answer.row_id,
            content=answer.content,
            status=status,
            metadata=metadata or None,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            runtime_model=answer.runtime_model,
            runtime_provider=answer.runtime_provider,
        )
        if preview:
            conversation.update(last_message=preview, last_active_time=utcnow())
        if conversation:
            update_row(Conversation, answer.conversation_db_id, **conversation)


def drop_prepared(turn: Turn, conv: Conversation) -> None:
    """Remove the turn's unused first-answer row (a tool result stored first would otherwise sort after it)."""
    if turn.prepared_answer_id is not None:
        database.execute_sql(DELETE_MESSAGE, (turn.prepared_answer_id,))
        database.execute_sql(_UNCOUNT_MESSAGE, (conv.id,))
        turn.prepared_answer_id = None
        conv.message_count -= 1


def new_answer(conv: Conversation, turn: Turn) -> Answer:
    """The next assistant message of the turn: the row stored at its start, or a new one."""
    if turn.prepared_answer_id is not None:  # the row stored when the turn began
        row_id, turn.prepared_answer_id = turn.prepared_answer_id, None
        return Answer(row_id=row_id, conversation_db_id=conv.id)
    with database.atomic():
        row_id = add_message(conv, "assistant", "", status="streaming")
    return Answer(row_id=row_id, conversation_db_id=conv.id)
