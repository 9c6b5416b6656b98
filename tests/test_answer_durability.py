"""An answer is reported `completed` only once its commit succeeded: a failed save is tried again, and a
save that keeps failing ends the stream with an error frame, `failed`, and the conversation idle."""

from __future__ import annotations

import asyncio
from typing import Any

from platform_server.db import database
from platform_server.features.conversations.models import Conversation, Message
from tests.helpers.chat import ChatEnv, names
from tests.helpers.llm_script import Script


def _refuse_commits(count: int) -> list[int]:
    """SQLite refuses the next `count` commits of the server's connection (its commit hook turns them into
    rollbacks, as a disk that fails the commit's write would); returns the refusals made so far."""
    refused: list[int] = []

    def hook() -> bool:
        if len(refused) < count:
            refused.append(1)
            return True  # the commit becomes a rollback
        return False

    database.obj.connection().set_commit_hook(hook)  # type: ignore[attr-defined]
    return refused


async def test_an_answer_whose_saves_failed_once_is_stored_whole_before_the_stream_says_completed(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=["one ", "two ", "three ", "four"], delay_s=0.25))
    streaming = asyncio.ensure_future(env.stream("count"))
    await asyncio.sleep(0.35)  # the turn started; its first partial save (after 0.5 s) and its end commit are next
    refused = _refuse_commits(2)
    try:
        events = await streaming
    finally:
        database.obj.connection().set_commit_hook(None)  # type: ignore[attr-defined]
    assert len(refused) == 2  # the partial save's commit and the end's first commit were refused
    done = events[-1].data
    assert done["status"] == "completed"
    stored = Message.get_or_none(Message.id == int(done["assistantMessageId"]))
    assert stored is not None and stored.content == "one two three four" and stored.status == "completed"
    conv = Conversation.get(Conversation.conversation_id == "c1")
    assert conv.stream_status == "idle" and conv.message_count == 2 == done["messageCount"]
    assert Message.select().where(Message.conversation == conv.id).count() == 2


async def test_an_answer_that_cannot_be_stored_ends_the_stream_failed_with_an_error_and_the_conversation_idle(env: ChatEnv) -> None:
    await env.stream("first")  # the conversation exists
    # every assistant row is refused from now on (a statement error each time: retried, then given up)
    database.execute_sql(
        "CREATE TEMP TRIGGER refuse_answers BEFORE INSERT ON message WHEN NEW.role = 'assistant' "
        "BEGIN SELECT RAISE(ABORT, 'no room for answers'); END"
    )
    try:
        events = await env.stream("second")
    finally:
        database.execute_sql("DROP TRIGGER refuse_answers")
    kinds = names(events)
    assert "error" in kinds and kinds[-1] == "done"
    assert events[-1].data["status"] == "failed"
    assert not any(e.event == "message_complete" and e.data.get("status") == "completed" for e in events)
    error: dict[str, Any] = next(e.data for e in events if e.event == "error")
    assert "could not be saved" in error["message"]
    r = await env.api.get("/api/v1/conversations/c1/status", token="alice")
    assert r.status == 200 and r.data["streamStatus"] == "idle"
    stored = await env.messages()
    assert [m["content"] for m in stored if m["role"] == "user"] == ["first", "second"]  # the question is kept
    assert len([m for m in stored if m["role"] == "assistant"]) == 1  # only the first turn's answer exists
    events = await env.stream("third")  # the conversation works on
    assert events[-1].data["status"] == "completed"


async def test_a_stopped_answer_whose_end_commit_failed_once_is_stored_as_stopped(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=[f"w{i} " for i in range(40)], delay_s=0.05))
    streaming = asyncio.ensure_future(env.stream("go"))
    await asyncio.sleep(0.2)  # streaming, before its first partial save (0.5 s)
    refused = _refuse_commits(1)
    try:
        stop = await env.api.post("/api/v1/chat/c1/stop", token="alice")
        events = await streaming
    finally:
        database.obj.connection().set_commit_hook(None)  # type: ignore[attr-defined]
    assert stop.status == 200 and refused == [1]
    done = events[-1].data
    assert done["status"] == "stopped"
    stored = Message.get_by_id(int(done["assistantMessageId"]))
    assert stored.status == "stopped" and stored.content.startswith("w0 ")  # the retry kept the status
