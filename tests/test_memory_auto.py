"""Memory that fills itself: facts from quiet or long conversations, without a summarize call."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from platform_server.db import utcnow
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script
from tests.helpers.memory import base, fact, folder


async def facts_of(env: ChatEnv, token: str = "alice", **params: Any) -> list[dict[str, Any]]:
    r = await env.api.get(f"{base(env)}/facts", token=token, params=params or None)
    assert r.status == 200, r.body
    return r.data


def extraction_loop(server: Any, minutes: float) -> Any:
    loop = server.platform.services.memory_extraction
    loop.clock = lambda: utcnow() + dt.timedelta(minutes=minutes)
    return loop


async def test_a_quiet_conversation_fills_memory_by_itself_once(env: ChatEnv, server: Any) -> None:
    await env.stream("I live in Lisbon and I am a nurse", conversation_id="c1")
    assert await extraction_loop(server, 1).tick() == 0  # not quiet yet
    env.llm.enqueue(Script(text=json.dumps([fact("home", "Lives in Lisbon"), fact("job", "Works as a nurse")])))
    assert await extraction_loop(server, 16).tick() == 1
    prompt = json.loads(env.llm.requests[-1]["messages"][1]["content"])
    assert "I live in Lisbon" in prompt["conversation"] and prompt["knownFacts"] == []
    assert {f["statement"] for f in await facts_of(env)} == {"Lives in Lisbon", "Works as a nurse"}
    notes = list((folder(server, env) / "daily").glob("*.md"))
    assert len(notes) == 1 and "conversation (auto) c1" in notes[0].read_text()
    assert "Lives in Lisbon" in (folder(server, env) / "MEMORY.md").read_text()
    requests = len(env.llm.requests)
    assert await extraction_loop(server, 60).tick() == 0  # nothing new since
    assert len(env.llm.requests) == requests

    await env.stream("Actually I moved to Porto", conversation_id="c1")
    env.llm.enqueue(Script(text=json.dumps([fact("home", "Lives in Porto")])))
    assert await extraction_loop(server, 16).tick() == 1
    prompt = json.loads(env.llm.requests[-1]["messages"][1]["content"])
    assert "I live in Lisbon" not in prompt["conversation"] and "moved to Porto" in prompt["conversation"]
    assert {"key": "home", "statement": "Lives in Lisbon"} in prompt["knownFacts"]
    contradictions = (await env.api.get(f"{base(env)}/facts/contradictions", token="alice")).data
    assert [(c["factA"]["statement"], c["factB"]["statement"]) for c in contradictions] == [
        ("Lives in Lisbon", "Lives in Porto")]


@pytest.mark.config(memory_extract_messages=4, memory_extract_idle_s=0)
async def test_a_long_conversation_is_extracted_before_it_goes_quiet_and_end_users_stay_apart(
    env: ChatEnv, server: Any
) -> None:
    await env.stream("My name is Ada", conversation_id="e1", endUserId="u1")
    assert await extraction_loop(server, 0).tick() == 0  # 2 messages, not 4
    await env.stream("I like tea", conversation_id="e1", endUserId="u1")
    env.llm.enqueue(Script(text=json.dumps([fact("name", "Is called Ada")])))
    assert await extraction_loop(server, 0).tick() == 1
    assert [f["statement"] for f in await facts_of(env, endUserId="u1")] == ["Is called Ada"]
    assert await facts_of(env) == [] and await facts_of(env, endUserId="u2") == []


async def test_summarize_moves_the_mark_so_the_loop_does_not_extract_the_same_messages_again(
    env: ChatEnv, server: Any
) -> None:
    await env.stream("Remember I use vim", conversation_id="c1")
    env.llm.enqueue(Script(text=json.dumps([fact("editor", "Uses vim")])))
    assert (await env.api.post(f"{base(env)}/summarize/c1", token="alice")).status == 200
    requests = len(env.llm.requests)
    assert await extraction_loop(server, 60).tick() == 0
    assert len(env.llm.requests) == requests


async def test_an_extractor_that_cannot_answer_json_gives_up_on_those_messages_after_three_tries(
    env: ChatEnv, server: Any
) -> None:
    await env.stream("I live in Lisbon", conversation_id="c1")
    minutes = 16.0
    for _ in range(3):  # each try comes after the failure's wait (the idle time)
        env.llm.enqueue(Script(text="Sure! The user lives in Lisbon."))
        asked = len(env.llm.requests)
        assert await extraction_loop(server, minutes).tick() == 0
        assert len(env.llm.requests) == asked + 1
        minutes += 16
    asked = len(env.llm.requests)
    for _ in range(3):  # given up: no more calls about these messages, however long we wait
        assert await extraction_loop(server, minutes).tick() == 0
        minutes += 16
    assert len(env.llm.requests) == asked
    assert await facts_of(env) == []

    await env.stream("I moved to Porto", conversation_id="c1")  # new talk is extracted again
    env.llm.enqueue(Script(text=json.dumps([fact("home", "Lives in Porto")])))
    assert await extraction_loop(server, minutes + 16).tick() == 1
    assert [f["statement"] for f in await facts_of(env)] == ["Lives in Porto"]
