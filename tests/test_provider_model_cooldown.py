"""A model's rate limit or 404 rests that model only: the provider's other models keep answering, the turn
fails over to the next pool entry at once, and /api/v1/llm/provider-pool shows each model's own circuit."""
from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.chat import make_agent, names, text_of
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer


async def pool(api: ApiClient) -> dict[str, dict[str, Any]]:
    r = await api.get("/api/v1/llm/provider-pool", token="alice")
    assert r.status == 200, r.body
    return {e["providerId"]: e for e in r.data}


def models(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["modelName"]: m for m in entry["models"]}


async def test_a_models_404s_and_rate_limits_bench_that_model_only_and_the_turn_fails_over_to_the_next(
    api: ApiClient, people: dict, llm: ScriptedOpenAI, server: RunningServer
) -> None:
    await use_fake_openai(api, llm.url, provider_id="p", model="m2")  # p's default chat model
    r = await api.post("/api/v1/models/p/models", {"modelName": "m1", "modelType": "chat"}, token="alice")
    assert r.status == 200, r.body
    agent = await make_agent(api, modelName="m1", modelProvider="p")
    r = await api.put(f"/api/v1/agents/{agent}/provider-preferences", {"providerIds": ["p"]}, token="alice")
    assert r.status == 200, r.body

    async def turn(message: str) -> list[Any]:
        body = {"agentId": agent, "conversationId": "m", "message": message}
        return await api.sse("POST", "/api/v1/chat/stream", body, token="alice", timeout=20)

    for i, fault in enumerate((Script(error_status=429, error_message="rate limited"),
                               Script(error_status=404, error_message="model m1 not found"),
                               Script(error_status=404, error_message="model m1 not found"))):
        llm.enqueue(fault, Script(text=f"m2 answers {i}"))
        events = await turn(f"try {i}")
        assert "error" not in names(events) and text_of(events) == f"m2 answers {i}"  # the same turn, failed over
        assert events[-1].data["runtimeProvider"] == "p" and events[-1].data["runtimeModel"] == "m2"
    assert [b["model"] for b in llm.requests] == ["m1", "m2"] * 3

    state = (await pool(api))["p"]
    assert state["state"] == "healthy" and state["consecutiveFailures"] == 0 and state["cooldownUntil"] is None
    by = models(state)
    assert by["m1"]["state"] == "cooldown" and by["m1"]["consecutiveFailures"] == 3 and by["m1"]["cooldownUntil"]
    assert "not found" in by["m1"]["lastError"] and by["m1"]["cooldownRemainingSeconds"] > 0
    assert by["m2"]["state"] == "healthy" and by["m2"]["lastSuccessTime"]

    llm.enqueue(Script(text="straight to m2"))
    events = await turn("while m1 rests")
    assert text_of(events) == "straight to m2" and llm.requests[-1]["model"] == "m2"
    assert len(llm.requests) == 7  # m1 was not asked

    pool_ = server.platform.services.llm.pool
    pool_.clock = lambda: 4_000_000_000.0  # long after m1's rest: its trial goes through and succeeds
    llm.enqueue(Script(text="m1 is back"))
    events = await turn("and now")
    assert text_of(events) == "m1 is back" and llm.requests[-1]["model"] == "m1"
    assert models((await pool(api))["p"])["m1"]["state"] == "healthy"


@pytest.mark.config(llm_retry_attempts=0)
async def test_a_provider_wide_failure_still_benches_every_model_of_the_provider(
    api: ApiClient, people: dict, llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(api, llm.url, provider_id="p", model="m2")
    await api.post("/api/v1/models/p/models", {"modelName": "m1", "modelType": "chat"}, token="alice")
    agent = await make_agent(api, modelName="m1", modelProvider="p")
    await api.put(f"/api/v1/agents/{agent}/provider-preferences", {"providerIds": ["p"]}, token="alice")
    for i in range(2):  # each turn: m1 and m2 both answer 503, three provider failures after the second turn
        llm.enqueue(Script(error_status=503), Script(error_status=503))
        body = {"agentId": agent, "conversationId": "w", "message": f"x{i}"}
        assert "error" in names(await api.sse("POST", "/api/v1/chat/stream", body, token="alice", timeout=20))
    state = (await pool(api))["p"]
    assert state["state"] == "cooldown" and set(models(state)) == {"m1", "m2"}
    asked = len(llm.requests)
    body = {"agentId": agent, "conversationId": "w", "message": "resting"}
    assert "error" in names(await api.sse("POST", "/api/v1/chat/stream", body, token="alice", timeout=20))
    assert len(llm.requests) == asked
