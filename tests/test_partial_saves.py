"""Streamed answers are kept while they stream: the partial saves of one loop pass share one commit,
an answer's row is written at its first save, and a row that cannot be stored spoils none of the others."""

from __future__ import annotations

import asyncio
import contextlib
from types import SimpleNamespace
from typing import Any

import pytest

from platform_server.db import database
from platform_server.features.chat import store
from platform_server.features.chat.store import Answer, TurnStore, new_answer
from platform_server.features.conversations.models import Conversation, Message
from tests.helpers.chat import ChatEnv


async def test_the_partial_saves_of_one_pass_are_stored_together_at_its_end(env: ChatEnv, server: Any) -> None:
    answers = server.platform.services.chat.store
    await env.stream("hello")  # a conversation with the user's message and the answer
    conv = Conversation.get(Conversation.conversation_id == "c1")
    count = conv.message_count
    first, second = new_answer(conv), new_answer(conv)
    first.content, second.content = "one so far", "two so far"
    answers.save_partial(first)
    answers.save_partial(second)
    assert Message.get_or_none(Message.id == first.row_id) is None  # nothing yet: stored at the end of this pass

    commits = []
    database.obj.connection().set_commit_hook(lambda: bool(commits.append(1)))  # type: ignore[attr-defined]
    try:
        await asyncio.sleep(0)
    finally:
        database.obj.connection().set_commit_hook(None)  # type: ignore[attr-defined]
    assert len(commits) == 1  # both rows in one commit
    rows = {m.id: m for m in Message.select().where(Message.id.in_([first.row_id, second.row_id]))}
    assert rows[first.row_id].content == "one so far" and rows[first.row_id].status == "streaming"
    assert rows[second.row_id].content == "two so far" and first.stored and second.stored
    assert Conversation.get_by_id(conv.id).message_count == count + 2  # each row counted once, when written

    first.content += " and more"
    answers.save_partial(first)  # a later save updates the row
    await asyncio.sleep(0)
    assert Message.get_by_id(first.row_id).content == "one so far and more"
    assert Conversation.get_by_id(conv.id).message_count == count + 2


async def test_an_answer_that_cannot_be_stored_spoils_none_of_the_others(env: ChatEnv, server: Any) -> None:
    answers = server.platform.services.chat.store
    await env.stream("hello")
    conv = Conversation.get(Conversation.conversation_id == "c1")
    good = new_answer(conv)
    orphan = Answer(row_id=new_answer(conv).row_id, conversation_db_id=-1)  # no such conversation
    good.content, orphan.content = "kept", "lost"
    answers.save_partial(orphan)
    answers.save_partial(good)
    await asyncio.sleep(0)
    assert Message.get_by_id(good.row_id).content == "kept"
    assert Message.get_or_none(Message.id == orphan.row_id) is None and not orphan.stored


def test_a_loop_closed_before_its_pass_leaves_nothing_that_stops_the_next_loop_storing(monkeypatch: pytest.MonkeyPatch) -> None:
    stored: list[int] = []
    answers = TurnStore(lambda exc: None)
    monkeypatch.setattr(answers, "_store_partial", lambda answer: stored.append(answer.row_id))
    monkeypatch.setattr(store, "database", SimpleNamespace(atomic=contextlib.nullcontext))

    loop = asyncio.new_event_loop()

    async def ask_then_stop() -> None:
        answers.save_partial(Answer(row_id=1, conversation_db_id=1))
        loop.stop()  # the loop ends with this pass: the save it asked for never runs

    loop.run_until_complete(ask_then_stop())
    loop.close()

    async def ask_and_pass() -> None:
        answers.save_partial(Answer(row_id=2, conversation_db_id=1))
        await asyncio.sleep(0)

    asyncio.run(ask_and_pass())
    assert stored == [2]  # the new loop's save is stored; the closed loop's is dropped, not carried over
