"""Each model says what it can do (chat, tools, json); background jobs skip a model that cannot do their job."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.client import ApiClient
from tests.helpers.memory import base


def chat_models(models: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{m['providerId']}/{m['modelName']}": m for m in models if m["modelType"] == "chat"}


async def test_the_embedded_model_is_labelled_chat_only_and_a_remote_model_does_everything(env: ChatEnv) -> None:
    models = chat_models((await env.api.get("/api/v1/models/by-type?type=chat", token="carol")).data)
    local = next(m for key, m in models.items() if key.startswith("local/"))
    assert local["capabilities"] == ["chat"]
    assert "offline demo" in local["label"]
    assert models["fake/scripted"]["capabilities"] == ["chat", "tools", "json"]
    assert models["fake/scripted"]["label"] is None


async def test_an_admin_sets_what_a_model_can_do_and_unknown_capabilities_are_refused(env: ChatEnv) -> None:
    model_id = chat_models((await env.api.get("/api/v1/models/enabled", token="alice")).data)["fake/scripted"]["id"]
    r = await env.api.put(f"/api/v1/models/{model_id}", {"capabilities": ["chat", "json"]}, token="alice")
    assert r.status == 200, r.body
    assert r.data["capabilities"] == ["chat", "json"]
    for bad in (["chat", "fly"], ["JSON"], [" json"]):  # the document's enum, as written
        r = await env.api.put(f"/api/v1/models/{model_id}", {"capabilities": bad}, token="alice")
        assert r.status == 400 and r.data is None and r.body["msg"].startswith("capabilities:"), r.body
    for given in (["json"], []):  # a chat model can always chat: chat is implied, not demanded
        r = await env.api.put(f"/api/v1/models/{model_id}", {"capabilities": given}, token="alice")
        assert r.status == 200 and r.data["capabilities"] == ["chat", *given], r.body
    # the update states the create's rules: maxInputTokens an integer (no "5", no 5.0, int64), modalities' pattern
    for bad in ({"maxInputTokens": "5"}, {"maxInputTokens": 5.5}, {"maxInputTokens": 2**63}, {"modalities": "smell"}):
        r = await env.api.put(f"/api/v1/models/{model_id}", bad, token="alice")
        assert r.status == 400 and r.body["msg"].startswith(next(iter(bad))), (bad, r.body)
    r = await env.api.post("/api/v1/models/fake/models", {"modelName": "tiny", "capabilities": ["chat"]}, token="alice")
    assert r.status == 200 and r.data["capabilities"] == ["chat"], r.body
    # only an enabled model of an enabled provider can be the default: what the model is, a 409
    tiny = r.data["id"]
    assert (await env.api.put(f"/api/v1/models/{tiny}", {"enabled": False}, token="alice")).status == 200
    r = await env.api.post(f"/api/v1/models/{tiny}/default", token="alice")
    assert r.status == 409, r.body


async def test_memory_extraction_skips_at_once_with_a_reason_when_the_model_cannot_write_json(env: ChatEnv, api: ApiClient) -> None:
    events = await env.stream("I live in Lisbon")
    assert events[-1].event == "done"
    model_id = chat_models((await api.get("/api/v1/models/enabled", token="alice")).data)["fake/scripted"]["id"]
    assert (await api.put(f"/api/v1/models/{model_id}", {"capabilities": ["chat"]}, token="alice")).status == 200
    asked = len(env.llm.requests)
    r = await api.post(f"{base(env)}/summarize/c1", token="alice")
    assert r.body["code"] == 2001, r.body  # the spec maps a model failure to 2001
    assert "Skipped memory extraction" in r.body["msg"] and "fake/scripted" in r.body["msg"] and "json" in r.body["msg"], r.body
    assert len(env.llm.requests) == asked  # the model was never asked


async def test_a_model_that_cannot_call_tools_is_offered_none_and_still_answers(env: ChatEnv, api: ApiClient) -> None:
    await env.stream("hello")
    assert env.llm.requests[-1].get("tools"), "a capable model is offered the default tools"
    model_id = chat_models((await api.get("/api/v1/models/enabled", token="alice")).data)["fake/scripted"]["id"]
    assert (await api.put(f"/api/v1/models/{model_id}", {"capabilities": ["chat", "json"]}, token="alice")).status == 200
    events = await env.stream("hello again")
    assert events[-1].event == "done", events
    assert "tools" not in env.llm.requests[-1]
