"""Models and providers through the real HTTP API, with scripted OpenAI-compatible servers."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platform_server.features.models.runtime import Routed, resolve_targets
from platform_server.integrations.llm import ChatMessage, ChatRequest, TextDelta
from platform_server.integrations.llm.local import find_default_gguf
from platform_server.features.models.errors import LlmFailure
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
        assert active["activeLlm"]["provider"] == "local" and active["activeLlm"]["modelName"] == default["modelName"]


async def test_a_custom_provider_with_a_model_becomes_the_default_through_the_helper(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    default = (await api.get("/api/v1/models/default", token="bob")).data
    assert default["providerId"] == "fake" and default["modelName"] == "scripted"
    assert set(default) >= {"id", "providerId", "modelName", "displayName", "modelType", "modalities", "maxInputTokens",
                            "isDefault", "enabled", "createTime"}
    assert (await api.get("/api/v1/models/active", token="bob")).data == {"activeLlm": {"provider": "fake", "modelName": "scripted", "providerId": "fake", "model": "scripted"}}
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
    assert r.status == 200 and r.data["activeLlm"]["modelName"] == "other-chat"
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
    ]
    for body, field in bad:
        r = await api.post("/api/v1/models/custom-providers", body, token="alice")
        assert r.status == 400 and r.msg.startswith(field), (body, r.body)
    # An id taken by another provider is a conflict with what exists, not a malformed body
    taken = {"providerId": "openai", "name": "x", "baseUrl": "http://127.0.0.1:1/v1"}
    r = await api.post("/api/v1/models/custom-providers", taken, token="alice")
    assert r.status == 409 and r.msg.startswith("providerId"), r.body
    r = await api.post("/api/v1/models/custom-providers", {"providerId": "lan", "name": "LAN", "baseUrl": "http://192.168.1.5:8000/v1"}, token="alice")
    assert r.status == 200 and r.data["enabled"] is True  # admin-configured LAN URLs are allowed


async def test_a_provider_config_update_states_its_shape_and_answers_409_for_what_the_provider_is(api: ApiClient, people: dict) -> None:
    """The document states the body's shape (baseUrl a URL or a path, protocol an enum, keepAlive's pattern): a body
    outside it is a 400. A well-formed one the provider refuses (a built-in's protocol, a URL kind its protocol does
    not take, Ollama settings elsewhere) is a 409: an empty baseUrl for a remote provider was a 400 the document allowed."""
    import re

    schema = (await api.get("/v3/api-docs")).body["components"]["schemas"]["ProviderConfigUpdate"]["properties"]
    assert re.fullmatch(schema["baseUrl"]["pattern"], "") and re.fullmatch(schema["baseUrl"]["pattern"], "/models/a.gguf")
    assert None in schema["protocol"]["enum"] and "ollama" in schema["protocol"]["enum"] and "gopher" not in schema["protocol"]["enum"]
    url = "/api/v1/models/deepseek/config"
    for body, field in (({"baseUrl": "not a url"}, "baseUrl"), ({"baseUrl": "ftp://h/v1"}, "baseUrl"), ({"protocol": "gopher"}, "protocol")):
        r = await api.put(url, body, token="alice")
        assert r.status == 400 and r.msg.startswith(field), (body, r.body)
    for body, field in (({"baseUrl": ""}, "baseUrl"), ({"baseUrl": "/models/a.gguf"}, "baseUrl"), ({"protocol": "ollama"}, "protocol"),
                        ({"keepAlive": "5m"}, "keepAlive"), ({"numCtx": 4096}, "numCtx")):
        r = await api.put(url, body, token="alice")
        assert r.status == 409 and r.msg.startswith(field), (body, r.body)
    r = await api.put(url, {"baseUrl": "https://api.deepseek.example/v1", "keepAlive": None}, token="alice")
    assert r.status == 200 and r.data["baseUrl"] == "https://api.deepseek.example/v1", r.body


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
    router = server.platform.services.llm
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


async def test_discover_lists_the_providers_own_models_and_apply_adds_them(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    r = await api.post("/api/v1/models/fake/discover", token="alice")
    assert r.status == 200
    found = {m["modelName"]: m for m in r.data["discoveredModels"]}
    assert set(found) == {"scripted", "other-chat", "text-embed-small"}
    assert {m["id"] for m in r.data["newModels"]} == {"other-chat", "text-embed-small"}
    assert (r.data["totalDiscovered"], r.data["newCount"]) == (3, 2)
    assert found["scripted"]["added"] is True and found["other-chat"]["added"] is False
    assert found["text-embed-small"]["modelType"] == "embedding"
    r = await api.post("/api/v1/models/fake/discover/apply", {"modelNames": ["nope"]}, token="alice")
    assert r.status == 400 and "nope" in r.msg
    r = await api.post("/api/v1/models/fake/discover/apply", {"modelNames": ["other-chat"]}, token="alice")
    assert r.status == 200 and [m["modelName"] for m in r.data] == ["other-chat"]
    r = await api.post("/api/v1/models/fake/discover/apply", {}, token="alice")
    assert [(m["modelName"], m["modelType"]) for m in r.data] == [("text-embed-small", "embedding")]
    r = await api.post("/api/v1/models/fake/discover/apply", {}, token="alice")
    assert r.data == []
    by_type = (await api.get("/api/v1/models/by-type", params={"type": "embedding"}, token="carol")).data
    assert "text-embed-small" in [m["modelName"] for m in by_type]


async def test_discover_against_an_unreachable_provider_is_an_llm_error(api: ApiClient, people: dict) -> None:
    r = await api.post("/api/v1/models/custom-providers", {"providerId": "dead", "name": "Dead", "baseUrl": "http://127.0.0.1:9/v1"}, token="alice")
    assert r.status == 200
    r = await api.post("/api/v1/models/dead/discover", token="alice")
    assert r.status == 500 and r.code == 2001 and r.msg.startswith("Model discovery failed")


async def test_test_connection_makes_a_real_one_token_call_and_reports_failures(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    fake.enqueue(Script(text="OK"))
    r = await api.post("/api/v1/models/fake/test-connection", token="alice")
    assert r.status == 200 and r.data["success"] is True and r.data["modelName"] == "scripted"
    assert fake.requests[-1]["max_tokens"] == 1 and fake.requests[-1]["model"] == "scripted"
    r = await api.put("/api/v1/models/fake/config", {"apiKey": "wrong-key"}, token="alice")
    assert r.status == 200 and r.data["apiKey"] == "wrong-key"
    r = await api.post("/api/v1/models/fake/test-connection", token="alice")
    assert r.status == 200 and r.data["success"] is False and "API key" in r.data["message"]
    await api.put("/api/v1/models/fake/config", {"apiKey": "test-key"}, token="alice")
    fake.enqueue(Script(text="fine"))
    r = await api.post("/api/v1/models/fake/models/test", {"modelName": "other-chat"}, token="alice")
    assert r.data["success"] is True and fake.requests[-1]["model"] == "other-chat"
    fake.enqueue(Script(error_status=404, error_message="model not found"))
    r = await api.post("/api/v1/models/fake/models/test", {"modelName": "missing"}, token="alice")
    assert r.data["success"] is False and "model not found" in r.data["message"]
    assert (await api.post("/api/v1/models/nope/test-connection", token="alice")).status == 404


async def test_disabling_the_default_models_provider_moves_the_default(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url, provider_id="second", model="second-model")
    await use_fake_openai(api, fake.url)
    assert (await api.get("/api/v1/models/default", token="alice")).data["providerId"] == "fake"
    r = await api.post("/api/v1/models/fake/disable", token="alice")
    assert r.status == 200 and r.data["enabled"] is False
    default = (await api.get("/api/v1/models/default", token="alice")).data
    assert default["providerId"] != "fake" and default["modelType"] == "chat"
    enabled = (await api.get("/api/v1/models/enabled", token="alice")).data
    assert all(m["providerId"] != "fake" for m in enabled)
    r = await api.post("/api/v1/models/fake/enable", token="alice")
    assert r.status == 200 and r.data["enabled"] is True
    assert (await api.get("/api/v1/models/default", token="alice")).data["providerId"] == default["providerId"]


async def test_context_window_is_set_and_cleared_by_null_or_non_positive(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    model_id = (await api.get("/api/v1/models/default", token="alice")).data["id"]
    path = "/api/v1/models/fake/models/context-window"
    r = await api.put(path, {"modelId": model_id, "maxInputTokens": 32000}, token="alice")
    assert r.status == 200 and r.data["maxInputTokens"] == 32000
    for clear in (None, 0, -5):
        await api.put(path, {"modelId": model_id, "maxInputTokens": 32000}, token="alice")
        r = await api.put(path, {"modelId": model_id, "maxInputTokens": clear}, token="alice")
        assert r.status == 200 and r.data["maxInputTokens"] is None
    r = await api.put("/api/v1/models/openai/models/context-window", {"modelId": model_id, "maxInputTokens": 5}, token="alice")
    assert r.status == 404
    r = await api.put(path, {"maxInputTokens": 5}, token="alice")
    assert r.status == 400 and r.msg.startswith("modelId")


async def test_models_crud_by_id_and_by_name(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    r = await api.post("/api/v1/models", {"providerId": "fake", "modelName": "vision-1", "modalities": "image,text"}, token="alice")
    assert r.status == 200 and r.data["modalities"] == "text,image"
    mid = r.data["id"]
    assert (await api.get(f"/api/v1/models/{mid}", token="carol")).data["modelName"] == "vision-1"
    r = await api.put(f"/api/v1/models/{mid}", {"displayName": "Vision One", "enabled": False}, token="alice")
    assert r.status == 200 and r.data["displayName"] == "Vision One" and r.data["enabled"] is False
    assert "vision-1" not in [m["modelName"] for m in (await api.get("/api/v1/models/enabled", token="alice")).data]
    await api.put(f"/api/v1/models/{mid}", {"enabled": True}, token="alice")
    images = (await api.get("/api/v1/models/by-type", params={"type": "chat", "modality": "image"}, token="carol")).data
    assert [m["modelName"] for m in images if m["providerId"] == "fake"] == ["vision-1"]
    assert (await api.get("/api/v1/models/by-type", params={"type": "audio"}, token="carol")).status == 400
    r = await api.post("/api/v1/models/fake/models", {"modelName": "vision-1"}, token="alice")
    assert r.status == 409 and "already exists" in r.msg  # a duplicate is a conflict with what exists
    r = await api.post("/api/v1/models/fake/models", {"modelName": "m", "modalities": "audio"}, token="alice")
    assert r.status == 400 and r.msg.startswith("modalities")
    assert (await api.delete(f"/api/v1/models/{mid}", token="alice")).status == 200
    assert (await api.get(f"/api/v1/models/{mid}", token="alice")).status == 404
    assert (await api.delete("/api/v1/models/fake/models", params={"modelName": "scripted"}, token="alice")).status == 200
    assert (await api.delete("/api/v1/models/fake/models", params={"modelName": "scripted"}, token="alice")).status == 404
    default = (await api.get("/api/v1/models/default", token="alice")).data
    assert default is None or default["providerId"] != "fake"


async def test_local_models_are_gguf_paths(api: ApiClient, people: dict, tmp_path: Any) -> None:
    r = await api.post("/api/v1/models/local/models", {"modelName": "/etc/passwd"}, token="alice")
    assert r.status == 404 and r.msg.startswith("modelName")  # the machine's files decide, not the body's shape
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    r = await api.post("/api/v1/models/local/models", {"modelName": str(gguf)}, token="alice")
    assert r.status == 200 and r.data["providerId"] == "local"


async def test_both_custom_provider_delete_variants_and_builtins_stay(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url, provider_id="one")
    await use_fake_openai(api, fake.url, provider_id="two.x", model="m2")
    assert (await api.delete("/api/v1/models/custom-providers/one", token="alice")).status == 200
    assert (await api.delete("/api/v1/models/custom-providers", params={"providerId": "two.x"}, token="alice")).status == 200
    ids = {p["id"] for p in (await api.get("/api/v1/models/catalog", token="alice")).data}
    assert "one" not in ids and "two.x" not in ids
    assert (await api.delete("/api/v1/models/custom-providers/one", token="alice")).status == 404
    r = await api.delete("/api/v1/models/custom-providers/openai", token="alice")
    assert r.status == 409 and "built-in" in r.msg  # the provider, not the request, forbids it
    assert (await api.delete("/api/v1/models/custom-providers", token="alice")).status == 400
    assert (await api.delete("/api/v1/models/custom-providers/x", token="bob")).status == 403
    events = (await api.get("/api/v1/audit/events", params={"resourceType": "MODEL_PROVIDER"}, token="alice")).data
    assert {e["action"] for e in events["records"]} >= {"CREATE", "DELETE"}


async def test_the_embedding_default_and_test_route_use_real_embeddings(api: ApiClient, people: dict, fake: ScriptedOpenAI) -> None:
    await use_fake_openai(api, fake.url)
    r = await api.post("/api/v1/models/fake/models", {"modelName": "text-embed-small", "modelType": "embedding"}, token="alice")
    remote_id = r.data["id"]
    r = await api.post(f"/api/v1/models/embedding/{remote_id}/test", {"text": "hello"}, token="alice")
    assert r.status == 200 and r.data["success"] is True and r.data["dimensions"] == 8
    assert fake.requests[-1] == {"model": "text-embed-small", "input": ["hello"]}
    r = await api.post("/api/v1/models/embedding/default", {"modelId": remote_id}, token="alice")
    assert r.status == 200 and r.data["isDefault"] is True
    assert (await api.get("/api/v1/models/embedding/default", token="carol")).data == remote_id
    chat_id = (await api.get("/api/v1/models/default", token="alice")).data["id"]
    assert (await api.post("/api/v1/models/embedding/default", {"modelId": chat_id}, token="alice")).status == 409  # what it is
    assert (await api.post(f"/api/v1/models/embedding/{chat_id}/test", token="alice")).status == 400
    local = [m for m in (await api.get("/api/v1/models/by-type", params={"type": "embedding"}, token="alice")).data
             if m["providerId"] == "local"]
    if local:
        r = await api.post(f"/api/v1/models/embedding/{local[0]['id']}/test", token="alice")
        assert r.data["success"] is True and r.data["dimensions"] > 8


async def test_the_model_and_provider_bodies_state_the_rules_the_server_checks(api: ApiClient, people: dict, tmp_path: Any) -> None:
    """Custom providers: the protocol decides what baseUrl must be (oneOf); models: modelType, modalities and
    capabilities as the document states them; a model removal naming no model finds none (404)."""
    import re

    schemas = (await api.get("/v3/api-docs")).body["components"]["schemas"]
    branches = schemas["CustomProviderCreate"]["oneOf"]
    url = re.compile(branches[0]["properties"]["baseUrl"]["pattern"])
    assert url.search("http://127.0.0.1:9/v1") and not url.search("http://user:pw@host/v1") and not url.search("http:///v1")
    post = "/api/v1/models/custom-providers"
    r = await api.post(post, {"providerId": "creds", "name": "x", "baseUrl": "http://user:pw@host/v1"}, token="alice")
    assert r.status == 400 and r.msg.startswith("baseUrl"), r.body
    r = await api.post(post, {"providerId": "gone", "name": "x", "protocol": "local", "baseUrl": str(tmp_path / "missing.gguf")}, token="alice")
    assert r.status == 404 and r.msg.startswith("baseUrl"), r.body
    model = schemas["ProviderModelCreate"]["properties"]
    assert model["capabilities"]["items"]["enum"] == ["chat", "tools", "json"] and None in model["modelType"]["enum"]
    modalities = re.compile(model["modalities"]["pattern"])
    for value, ok in (("text, image", True), ("", True), ("text,,image", False), ("audio", False)):
        assert bool(modalities.search(value)) is ok, value
        r = await api.post("/api/v1/models/openai/models", {"modelName": f"m{len(value)}{ok}", "modalities": value}, token="alice")
        assert (r.status == 200) is ok, (value, r.body)
    r = await api.post("/api/v1/models/openai/models", {"modelName": "plain", "modelType": ""}, token="alice")
    assert r.status == 400 and r.msg.startswith("modelType"), r.body
    r = await api.post("/api/v1/models/openai/models", {"modelName": "caps", "capabilities": []}, token="alice")
    assert r.status == 200 and r.data["capabilities"] == ["chat"], r.body
    for params in ({}, {"modelName": ""}):
        r = await api.delete("/api/v1/models/openai/models", params=params, token="alice")
        assert r.status == 404, (params, r.body)
