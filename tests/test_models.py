"""Models and providers through the real HTTP API, with scripted OpenAI-compatible servers."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platform_server.features.models.runtime import Routed, resolve_targets
from platform_server.integrations.llm import ChatMessage, ChatRequest, TextDelta
from platform_server.integrations.llm.local import find_default_gguf
from platform_server.web.errors import LlmFailure
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.llm_script import Script
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer

HAS_LOCAL = find_default_gguf() is not None


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[ScriptedOpenAI]:
    srv = ScriptedOpenAI(api_key="test-key", models=["scripted", "other-chat", "text-embed-small"])
    await srv.start()
    yield srv
    await srv.stop()


def by_id(providers: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in providers}


async def test_the_catalog_is_seeded_disabled_except_local_with_the_embedded_model_as_default(api: ApiClient, people: dict) -> None:
    r = await api.get("/api/v1/models/catalog", token="alice")
    assert r.status == 200
    catalog = by_id(r.data)
    for pid in ("openai", "anthropic", "deepseek", "openrouter", "ollama", "lmstudio", "vllm", "local"):
        assert pid in catalog and catalog[pid]["builtin"] is True
    assert all(not p["enabled"] for pid, p in catalog.items() if pid != "local")
    assert catalog["openai"]["protocol"] == "openai" and catalog["anthropic"]["protocol"] == "anthropic"
    if HAS_LOCAL:
        assert catalog["local"]["enabled"] is True
        default = (await api.get("/api/v1/models/default", token="carol")).data
        assert default["providerId"] == "local" and default["isDefault"] is True and default["modelType"] == "chat"
        active = (await api.get("/api/v1/models/active", token="carol")).data
        assert active == {"activeLlm": {"provider": "local", "modelName": default["modelName"]}}


async def test_a_custom_provider_with_a_model_becomes_the_default_through_the_helper(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    default = (await api.get("/api/v1/models/default", token="bob")).data
    assert default["providerId"] == "fake" and default["modelName"] == "scripted"
    assert set(default) == {"id", "providerId", "modelName", "displayName", "modelType", "modalities", "maxInputTokens",
                            "isDefault", "enabled", "createTime"}
    assert (await api.get("/api/v1/models/active", token="bob")).data == {"activeLlm": {"provider": "fake", "modelName": "scripted"}}
    enabled = (await api.get("/api/v1/models/enabled", token="carol")).data
    assert [m["modelName"] for m in enabled if m["providerId"] == "fake"] == ["scripted"]
    assert sum(1 for m in enabled if m["isDefault"] and m["modelType"] == "chat") == 1
    providers = by_id((await api.get("/api/v1/models", token="alice")).data)
    assert providers["fake"]["apiKey"] == "test-key" and providers["fake"]["enabled"] is True
    assert "openai" not in providers  # GET /models lists enabled providers only


async def test_put_active_switches_the_default_chat_model(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    r = await api.post("/api/v1/models/fake/models", {"modelName": "other-chat"}, token="alice")
    assert r.status == 200 and r.data["isDefault"] is False
    r = await api.put("/api/v1/models/active", {"provider": "fake", "modelName": "other-chat"}, token="alice")
    assert r.status == 200 and r.data == {"activeLlm": {"provider": "fake", "modelName": "other-chat"}}
    assert (await api.get("/api/v1/models/default", token="alice")).data["modelName"] == "other-chat"
    r = await api.put("/api/v1/models/active", {"provider": "fake", "modelName": "nope"}, token="alice")
    assert r.status == 404
    r = await api.put("/api/v1/models/active", {"provider": "fake", "modelName": "scripted"}, token="bob")
    assert r.status == 403


async def test_custom_provider_ids_and_urls_are_validated(api: ApiClient, people: dict) -> None:
    bad = [
        ({"providerId": "Bad Id", "name": "x", "baseUrl": "http://127.0.0.1:1/v1"}, "providerId"),
        ({"providerId": "ok", "name": "x", "baseUrl": "ftp://host/v1"}, "baseUrl"),
        ({"providerId": "ok", "name": "x", "baseUrl": "http://127.0.0.1:1/v1", "protocol": "grpc"}, "protocol"),
        ({"providerId": "openai", "name": "x", "baseUrl": "http://127.0.0.1:1/v1"}, "providerId"),
    ]
    for body, field in bad:
        r = await api.post("/api/v1/models/custom-providers", body, token="alice")
        assert r.status == 400 and r.msg.startswith(field), (body, r.body)
    r = await api.post("/api/v1/models/custom-providers", {"providerId": "lan", "name": "LAN", "baseUrl": "http://192.168.1.5:8000/v1"}, token="alice")
    assert r.status == 200 and r.data["enabled"] is True  # admin-configured LAN URLs are allowed


async def test_model_entities_never_carry_an_api_key(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    for path in ("/api/v1/models/enabled", "/api/v1/models/default", "/api/v1/models/by-type?type=chat", "/api/v1/models/active"):
        r = await api.get(path, token="carol")
        assert r.status == 200, path
        assert "test-key" not in r.raw.decode() and "apiKey" not in r.raw.decode(), path


async def test_resolve_targets_orders_explicit_then_default_then_preferences(server: RunningServer, api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    await use_fake_openai(api, fake.url, provider_id="backup", model="other-chat")  # now the default
    targets = resolve_targets(None, None, ["fake", "backup", "openai", "nope"])
    assert [(t.provider_id, t.model_name) for t in targets] == [("backup", "other-chat"), ("fake", "scripted")]
    assert targets[0].api_key == "test-key" and targets[0].protocol == "openai" and targets[0].base_url == fake.url
    assert [t.model_name for t in resolve_targets("fake/custom-name", None, [])] == ["custom-name"]
    assert [t.provider_id for t in resolve_targets("scripted", None, ["backup"])] == ["fake", "backup"]
    assert [t.model_name for t in resolve_targets("x", "fake", [])] == ["x"]
    assert [t.model_name for t in resolve_targets("unknown-model", None, [])] == ["other-chat"]  # falls back to the default
    await api.post("/api/v1/models/fake/disable", token="alice")
    await api.post("/api/v1/models/backup/disable", token="alice")
    await api.post("/api/v1/models/local/disable", token="alice")
    with pytest.raises(LlmFailure, match="No chat model configured"):
        resolve_targets(None, None, ["fake"])


async def test_the_router_streams_from_the_default_model_and_names_the_target_first(server: RunningServer, api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    fake.enqueue(Script(text="Hello from the fake"))
    router = server.platform.services["llm"]
    req = ChatRequest(model="", messages=[ChatMessage("user", "hi")])
    events = [e async for e in router.stream_chat(resolve_targets(None, None, []), req)]
    assert isinstance(events[0], Routed) and events[0].target.provider_id == "fake"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello from the fake"
    assert fake.requests[-1]["model"] == "scripted"
    vectors = await router.embed(["a", "b"], None)
    assert len(vectors) == 2 and len(vectors[0]) > 0


async def test_non_admins_get_403_on_admin_routes(api: ApiClient, people: dict) -> None:
    calls = [
        ("GET", "/api/v1/models", None), ("GET", "/api/v1/models/catalog", None),
        ("POST", "/api/v1/models/custom-providers", {"providerId": "x", "name": "x", "baseUrl": "http://127.0.0.1:9/v1"}),
        ("POST", "/api/v1/models/openai/enable", None), ("PUT", "/api/v1/models/openai/config", {"apiKey": "k"}),
        ("POST", "/api/v1/models/openai/models", {"modelName": "m"}), ("GET", "/api/v1/llm/provider-pool", None),
        ("PUT", "/api/v1/models/openai/models/context-window", {"modelId": 1, "maxInputTokens": 5}),
    ]
    for who in ("bob", "carol"):
        for method, path, body in calls:
            r = await api.request(method, path, body, token=who)
            assert r.status == 403, (who, method, path, r.body)
    assert (await api.get("/api/v1/models/enabled", token="carol")).status == 200
