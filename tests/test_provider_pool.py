"""Failover across providers, the 3-failure cooldown and the provider-pool routes (with a fake clock)."""
from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from platform_server.features.models.runtime import COOLDOWN_S, Routed, resolve_targets
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError, TextDelta
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.llm_script import Script
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest_asyncio.fixture
async def two() -> AsyncIterator[tuple[ScriptedOpenAI, ScriptedOpenAI]]:
    a, b = ScriptedOpenAI(), ScriptedOpenAI()
    await a.start()
    await b.start()
    yield a, b
    await a.stop()
    await b.stop()


def req() -> ChatRequest:
    return ChatRequest(model="", messages=[ChatMessage("user", "hi")])


async def answer(router, targets) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    events = [e async for e in router.stream_chat(targets, req())]
    routed = events[0]
    assert isinstance(routed, Routed)
    return routed.target.provider_id, "".join(e.text for e in events if isinstance(e, TextDelta))


def pool(entries: list[dict]) -> dict[str, dict]:
    return {e["providerId"]: e for e in entries}


async def test_a_provider_failing_three_times_rests_for_a_probe_interval_and_the_next_answers(
    server: RunningServer, api: ApiClient, people: dict, two: tuple[ScriptedOpenAI, ScriptedOpenAI]
) -> None:
    primary, backup = two
    await use_fake_openai(api, backup.url, provider_id="backup", model="b-model")
    await use_fake_openai(api, primary.url, provider_id="primary", model="p-model")
    router = server.platform.services.llm
    clock = FakeClock()
    router.pool.clock = clock
    targets = resolve_targets(None, None, ["backup"])
    assert [t.provider_id for t in targets] == ["primary", "backup"]

    for i in range(3):
        primary.enqueue(Script(error_status=500, error_message="boom"))
        backup.enqueue(Script(text=f"backup {i}"))
        assert await answer(router, targets) == ("backup", f"backup {i}")
    assert len(primary.requests) == 3

    state = pool((await api.get("/api/v1/llm/provider-pool", token="alice")).data)
    assert state["primary"]["state"] == "cooldown" and state["primary"]["consecutiveFailures"] == 3
    assert state["primary"]["cooldownUntil"] is not None and state["primary"]["lastError"]
    assert state["backup"]["state"] == "healthy" and state["backup"]["consecutiveFailures"] == 0
    assert state["openai"]["state"] == "disabled"

    clock.now += COOLDOWN_S - 1  # still cooling: primary is not even asked
    backup.enqueue(Script(text="still backup"))
    assert await answer(router, targets) == ("backup", "still backup")
    assert len(primary.requests) == 3

    clock.now += 2  # cooldown over: primary answers again and recovers
    primary.enqueue(Script(text="primary is back"))
    assert await answer(router, targets) == ("primary", "primary is back")
    state = pool((await api.get("/api/v1/llm/provider-pool", token="alice")).data)
    assert state["primary"]["state"] == "healthy" and state["primary"]["cooldownUntil"] is None


async def test_every_target_failing_or_cooling_raises_a_clear_llm_error(
    server: RunningServer, api: ApiClient, people: dict, two: tuple[ScriptedOpenAI, ScriptedOpenAI]
) -> None:
    primary, _ = two
    await use_fake_openai(api, primary.url, provider_id="primary", model="p-model")
    router = server.platform.services.llm
    router.pool.clock = FakeClock()
    targets = resolve_targets(None, None, [])
    for _ in range(3):
        primary.enqueue(Script(error_status=503, error_message="overloaded"))
        with pytest.raises(LlmError, match="overloaded"):
            await answer(router, targets)
    with pytest.raises(LlmError, match="cooling down"):
        await answer(router, targets)


@pytest.mark.config(llm_idle_timeout_s=0.3)
async def test_an_error_after_the_first_event_raises_instead_of_failing_over(
    server: RunningServer, api: ApiClient, people: dict, two: tuple[ScriptedOpenAI, ScriptedOpenAI]
) -> None:
    primary, backup = two
    await use_fake_openai(api, backup.url, provider_id="backup", model="b-model")
    await use_fake_openai(api, primary.url, provider_id="primary", model="p-model")
    router = server.platform.services.llm
    primary.enqueue(Script(text="partial answer here", hang_after_chunks=2))  # one text chunk, then silence
    got: list[object] = []
    with pytest.raises(LlmError, match="primary"):
        async for ev in router.stream_chat(resolve_targets(None, None, ["backup"]), req()):
            got.append(ev)
    assert isinstance(got[0], Routed) and got[0].target.provider_id == "primary"
    assert isinstance(got[1], TextDelta)
    assert backup.requests == []


async def test_chat_fails_over_too_and_returns_the_answering_target(
    server: RunningServer, api: ApiClient, people: dict, two: tuple[ScriptedOpenAI, ScriptedOpenAI]
) -> None:
    primary, backup = two
    await use_fake_openai(api, backup.url, provider_id="backup", model="b-model")
    await use_fake_openai(api, primary.url, provider_id="primary", model="p-model")
    router = server.platform.services.llm
    primary.enqueue(Script(error_status=502))
    backup.enqueue(Script(text="from backup"))
    target, result = await router.chat(resolve_targets(None, None, ["backup"]), req())
    assert target.provider_id == "backup" and result.content == "from backup"
    assert pool(router.pool_state())["primary"]["consecutiveFailures"] == 1


async def test_reprobe_tests_now_and_clears_a_cooldown(
    server: RunningServer, api: ApiClient, people: dict, two: tuple[ScriptedOpenAI, ScriptedOpenAI]
) -> None:
    primary, _ = two
    await use_fake_openai(api, primary.url, provider_id="primary", model="p-model")
    router = server.platform.services.llm
    router.pool.clock = FakeClock()
    for _ in range(3):
        primary.enqueue(Script(error_status=500))
        r = await api.post("/api/v1/llm/provider-pool/primary/reprobe", token="alice")
        assert r.status == 200 and r.data["probe"]["success"] is False
    assert r.data["state"] == "cooldown" and r.data["consecutiveFailures"] == 3
    r = await api.post("/api/v1/llm/provider-pool/primary/reprobe", token="alice")
    assert r.status == 200 and r.data["probe"]["success"] is True
    assert r.data["state"] == "healthy" and r.data["consecutiveFailures"] == 0
    assert primary.requests[-1]["max_tokens"] == 1  # a real one-token call
    assert (await api.post("/api/v1/llm/provider-pool/nope/reprobe", token="alice")).status == 404
    assert (await api.post("/api/v1/llm/provider-pool/primary/reprobe", token="bob")).status == 403


async def test_an_in_stream_error_before_any_content_still_fails_over(
    server: RunningServer, api: ApiClient, people: dict, two: tuple[ScriptedOpenAI, ScriptedOpenAI]
) -> None:
    primary, backup = two
    await use_fake_openai(api, backup.url, provider_id="backup", model="b-model")
    await use_fake_openai(api, primary.url, provider_id="primary", model="p-model")
    router = server.platform.services.llm
    primary.enqueue(Script(text="never sent", stream_error="exploded before content"))
    backup.enqueue(Script(text="backup answers"))
    assert await answer(router, resolve_targets(None, None, ["backup"])) == ("backup", "backup answers")
    state = pool(router.pool_state())["primary"]
    assert state["state"] == "degraded" and "exploded before content" in state["lastError"]
