"""Faulty providers: a 500, a hang or a malformed stream fails over to the agent's next provider
before any output, ends the turn with an `error` event after output, and cools the provider down."""
from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

from tests.helpers.chat import make_agent, names, text_of
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai

FAST_TIMEOUTS = {"llm_first_byte_timeout_s": 0.3, "llm_idle_timeout_s": 0.3}


class Pair:
    """Two scripted providers; the agent uses `primary` (the default) and prefers `backup` next."""

    def __init__(self, api: ApiClient, primary: ScriptedOpenAI, backup: ScriptedOpenAI, agent_id: str) -> None:
        self.api, self.primary, self.backup, self.agent_id = api, primary, backup, agent_id

    async def stream(self, message: str, conversation_id: str = "r1") -> list[Any]:
        body = {"agentId": self.agent_id, "conversationId": conversation_id, "message": message}
        return await self.api.sse("POST", "/api/v1/chat/stream", body, token="alice", timeout=40)

    async def pool(self) -> dict[str, dict[str, Any]]:
        r = await self.api.get("/api/v1/llm/provider-pool", token="alice")
        assert r.status == 200, r.body
        return {e["providerId"]: e for e in r.data}

    async def state(self, provider_id: str) -> dict[str, Any]:
        return (await self.pool())[provider_id]

    async def messages(self, conversation_id: str = "r1") -> list[dict[str, Any]]:
        r = await self.api.get(f"/api/v1/conversations/{conversation_id}/messages", token="alice")
        assert r.status == 200, r.body
        return r.data

    async def status(self, conversation_id: str = "r1") -> str:
        r = await self.api.get(f"/api/v1/conversations/{conversation_id}/status", token="alice")
        return r.data["streamStatus"]


@pytest.fixture
async def pair(api: ApiClient, people: dict) -> AsyncIterator[Pair]:
    primary, backup = ScriptedOpenAI(), ScriptedOpenAI()
    await primary.start()
    await backup.start()
    try:
        await use_fake_openai(api, backup.url, provider_id="backup", model="b-model")
        await use_fake_openai(api, primary.url, provider_id="primary", model="p-model")  # the default
        agent_id = await make_agent(api)
        r = await api.put(f"/api/v1/agents/{agent_id}/provider-preferences", {"providerIds": ["backup"]}, token="alice")
        assert r.status == 200, r.body
        yield Pair(api, primary, backup, agent_id)
    finally:
        await primary.stop()
        await backup.stop()


BEFORE_OUTPUT = {
    "answers 500": Script(error_status=500, error_message="primary exploded"),
    "hangs without headers": Script(hang=True),
    "sends a malformed stream": Script(text="never shown", malformed=True),
    "stalls before any text": Script(text="never shown", hang_after_chunks=1),
    "sends an error event before any text": Script(text="never shown", stream_error="upstream broke"),
}


@pytest.mark.config(**FAST_TIMEOUTS)
@pytest.mark.parametrize("fault", list(BEFORE_OUTPUT))
async def test_a_provider_failing_before_any_output_fails_over_to_the_next_preferred_provider(
    pair: Pair, fault: str
) -> None:
    pair.primary.enqueue(BEFORE_OUTPUT[fault])
    pair.backup.enqueue(Script(text="the backup answers"))
    events = await pair.stream("hello")
    assert "error" not in names(events)
    assert text_of(events) == "the backup answers"
    done = events[-1]
    assert done.event == "done" and done.data["status"] == "completed"
    assert done.data["runtimeProvider"] == "backup" and done.data["runtimeModel"] == "b-model"
    state = await pair.pool()
    assert state["primary"]["consecutiveFailures"] == 1 and state["primary"]["lastError"]
    assert state["backup"]["consecutiveFailures"] == 0
    msgs = await pair.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert msgs[1]["runtimeProvider"] == "backup" and msgs[1]["status"] == "completed"


MID_STREAM = {
    "stalls mid-answer": Script(text=["partial ", "answer ", "lost"], hang_after_chunks=2),
    "closes without finishing": Script(text=["partial ", "answer"], no_done=True),
}


@pytest.mark.config(**FAST_TIMEOUTS)
@pytest.mark.parametrize("fault", list(MID_STREAM))
async def test_a_provider_failing_after_output_gives_an_error_event_and_the_conversation_recovers(
    pair: Pair, fault: str
) -> None:
    pair.primary.enqueue(MID_STREAM[fault])
    events = await pair.stream("hello")
    assert "error" in names(events), names(events)
    assert events[-1].event == "done" and events[-1].data["status"] == "failed"
    assert pair.backup.requests == []  # text may already have reached the user: no silent switch
    assert await pair.status() == "idle"
    msgs = await pair.messages()
    assert msgs[0]["content"] == "hello" and msgs[-1]["status"] == "failed"
    pair.primary.enqueue(Script(text="working again"))
    events = await pair.stream("again")
    assert text_of(events) == "working again" and events[-1].data["status"] == "completed"


async def test_every_provider_failing_gives_one_error_event_and_a_failed_idle_turn(pair: Pair) -> None:
    pair.primary.enqueue(Script(error_status=500, error_message="primary down"))
    pair.backup.enqueue(Script(error_status=503, error_message="backup down"))
    events = await pair.stream("hello")
    errors = [e for e in events if e.event == "error"]
    assert len(errors) == 1
    # The user reads what failed and an error id; the providers' own answers stay in the log under that id.
    assert errors[0].data["message"] == f"The model provider failed to answer. (error {errors[0].data['errorId']})"
    assert "primary down" not in errors[0].data["message"] and "backup down" not in errors[0].data["message"]
    assert events[-1].data["status"] == "failed"
    assert await pair.status() == "idle"


async def test_after_three_failures_the_pool_skips_the_provider_and_goes_straight_to_the_next(pair: Pair) -> None:
    for i in range(3):
        pair.primary.enqueue(Script(error_status=500))
        pair.backup.enqueue(Script(text=f"backup {i}"))
        events = await pair.stream(f"try {i}", conversation_id=f"c{i}")
        assert events[-1].data["runtimeProvider"] == "backup"
    asked = len(pair.primary.requests)
    assert (await pair.pool())["primary"]["state"] == "cooldown"
    pair.backup.enqueue(Script(text="no detour"))
    events = await pair.stream("fourth", conversation_id="c4")
    assert text_of(events) == "no detour" and events[-1].data["runtimeProvider"] == "backup"
    assert len(pair.primary.requests) == asked  # not even tried while cooling down
