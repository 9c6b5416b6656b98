"""Ollama as a first-class provider: its own REST API (model list, context length, capabilities, NDJSON chat,
tool calls, embeddings, keep_alive and num_ctx), against a server that speaks and checks that API."""
from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from platform_server.integrations.llm import ChatMessage, ChatRequest, Finish, LlmError, TextDelta, Usage, make_client
from platform_server.integrations.llm.types import ProviderSettings
from tests.helpers.chat import make_agent, names, text_of
from tests.helpers.client import ApiClient
from tests.helpers.fake_ollama import OllamaModel, Script, ScriptedOllama, ScriptedToolCall
from tests.helpers.server import create_personas, start_server

MODELS = [
    OllamaModel("llama3.2:latest", "llama", 131072, ("completion", "tools")),
    OllamaModel("llava:7b", "clip", 4096, ("completion", "vision")),
    OllamaModel("nomic-embed-text:latest", "nomic-bert", 2048, ("embedding",)),
    OllamaModel("qwen3:0.6b", "qwen3", 40960, ("completion", "tools", "thinking")),
]


@pytest_asyncio.fixture
async def ollama() -> AsyncIterator[ScriptedOllama]:
    srv = ScriptedOllama(MODELS)
    await srv.start()
    yield srv
    await srv.stop()


async def add_ollama(api: ApiClient, url: str, provider_id: str = "lan-ollama", **settings: Any) -> dict[str, dict[str, Any]]:
    """Create an Ollama provider at url, add every model it lists, make llama3.2 the default chat model."""
    r = await api.post("/api/v1/models/custom-providers", {"providerId": provider_id, "name": "Ollama", "baseUrl": url, "protocol": "ollama", **settings}, token="alice")
    assert r.status == 200, r.body
    r = await api.post(f"/api/v1/models/{provider_id}/discover/apply", {}, token="alice")
    assert r.status == 200, r.body
    added = {m["modelName"]: m for m in r.data}
    r = await api.post(f"/api/v1/models/{added['llama3.2:latest']['id']}/default", token="alice")
    assert r.status == 200, r.body
    return added


async def test_discovery_lists_ollamas_models_with_their_context_length_and_capabilities(api: ApiClient, people: dict, ollama: ScriptedOllama) -> None:
    r = await api.post(
        "/api/v1/models/custom-providers",
        {"providerId": "lan-ollama", "name": "Ollama", "baseUrl": ollama.url, "protocol": "ollama"},  # a LAN/loopback URL: allowed
        token="alice",
    )
    assert r.status == 200, r.body
    assert r.data["protocol"] == "ollama" and r.data["baseUrl"] == ollama.url
    r = await api.post(
        "/api/v1/models/custom-providers",
        {"providerId": "gpu-box", "name": "GPU box", "baseUrl": "http://192.168.1.20:11434", "protocol": "ollama"},
        token="alice",
    )
    assert r.status == 200 and r.data["baseUrl"] == "http://192.168.1.20:11434", r.body  # a LAN host: admins may

    r = await api.post("/api/v1/models/lan-ollama/discover", token="alice")
    assert r.status == 200, r.body
    found = {m["modelName"]: m for m in r.data["discoveredModels"]}
    assert set(found) == {"llama3.2:latest", "llava:7b", "nomic-embed-text:latest", "qwen3:0.6b"}
    assert found["llama3.2:latest"]["maxInputTokens"] == 131072 and found["llama3.2:latest"]["modelType"] == "chat"
    assert found["llama3.2:latest"]["capabilities"] == ["completion", "tools"]
    assert found["llava:7b"]["modalities"] == "text,image" and found["llava:7b"]["maxInputTokens"] == 4096
    assert found["nomic-embed-text:latest"]["modelType"] == "embedding" and found["nomic-embed-text:latest"]["maxInputTokens"] == 2048
    assert {r.path for r in ollama.request_log} == {"/api/tags", "/api/show"}

    r = await api.post("/api/v1/models/lan-ollama/discover/apply", {}, token="alice")
    assert r.status == 200, r.body
    catalog = (await api.get("/api/v1/models/catalog", token="alice")).data
    stored = {m["modelName"]: m for p in catalog if p["id"] == "lan-ollama" for m in p["models"]}
    assert stored["llama3.2:latest"]["maxInputTokens"] == 131072  # what the context builder reads
    assert stored["nomic-embed-text:latest"]["modelType"] == "embedding"
    # what the server says a model can do is what the platform stores (llava lists no tools: never offered any)
    assert stored["llama3.2:latest"]["capabilities"] == ["chat", "tools", "json"]
    assert stored["llava:7b"]["capabilities"] == ["chat", "json"]


async def test_the_builtin_ollama_entry_speaks_ollamas_api_and_needs_no_key(api: ApiClient, people: dict) -> None:
    catalog = {p["id"]: p for p in (await api.get("/api/v1/models/catalog", token="alice")).data}
    assert catalog["ollama"]["protocol"] == "ollama" and catalog["ollama"]["baseUrl"] == "http://127.0.0.1:11434"
    assert catalog["ollama"]["configured"] is True


async def test_a_chat_streams_through_ollama_with_a_tool_call(api: ApiClient, people: dict, ollama: ScriptedOllama) -> None:
    await add_ollama(api, ollama.url)
    agent = await make_agent(api)
    ollama.enqueue(
        Script(reasoning="Let me look.", tool_calls=[ScriptedToolCall("get_current_time", {"timezone": "UTC"}, id="call_7")]),
        Script(text="It is time.", prompt_tokens=42, completion_tokens=4),
    )
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "o1", "message": "what time is it?"}, token="alice")
    seq = names(events)
    assert "tool_call_started" in seq and "tool_call_completed" in seq, events
    started = next(e for e in events if e.event == "tool_call_started").data
    assert started["toolName"] == "get_current_time" and json.loads(started["arguments"]) == {"timezone": "UTC"}
    assert text_of(events) == "It is time."
    done = events[-1].data
    assert done["status"] == "completed" and done["runtimeProvider"] == "lan-ollama" and done["runtimeModel"] == "llama3.2:latest"
    assert done["promptTokens"] >= 42 and done["completionTokens"] >= 4

    first, second = ollama.chat_requests()
    assert first["stream"] is True and first["model"] == "llama3.2:latest"
    assert any(t["function"]["name"] == "get_current_time" for t in first["tools"])
    call = next(m for m in second["messages"] if m["role"] == "assistant" and m.get("tool_calls"))
    assert call["tool_calls"][0]["function"]["arguments"] == {"timezone": "UTC"}  # an object, as Ollama takes it
    result = next(m for m in second["messages"] if m["role"] == "tool")
    assert result["tool_name"] == "get_current_time" and result["tool_call_id"] == "call_7" and isinstance(result["content"], str)


async def test_the_thinking_level_becomes_think_only_for_a_model_that_thinks(api: ApiClient, people: dict, ollama: ScriptedOllama) -> None:
    added = await add_ollama(api, ollama.url)
    agent = await make_agent(api)
    body = {"agentId": agent, "message": "hi", "thinkingLevel": "high"}
    events = await api.sse("POST", "/api/v1/chat/stream", {**body, "conversationId": "t0"}, token="alice")
    assert events[-1].data["status"] == "completed", events  # llama3.2 does not think: no `think` (Ollama: 400)
    assert "think" not in ollama.chat_requests()[-1]

    await api.post(f"/api/v1/models/{added['qwen3:0.6b']['id']}/default", token="alice")
    ollama.enqueue(Script(reasoning="Counting the letters.", text="Three."))
    events = await api.sse("POST", "/api/v1/chat/stream", {**body, "conversationId": "t1"}, token="alice")
    assert events[-1].data["status"] == "completed", events
    assert ollama.chat_requests()[-1]["think"] == "high"
    assert "".join(e.data["delta"] for e in events if e.event == "thinking_delta") == "Counting the letters."
    assert text_of(events) == "Three."
    ollama.enqueue(Script(text="Plain."))
    await api.sse("POST", "/api/v1/chat/stream", {**body, "thinkingLevel": "off", "conversationId": "t2"}, token="alice")
    assert ollama.chat_requests()[-1]["think"] is False


async def test_an_image_reaches_a_vision_model_as_ollamas_base64_images(api: ApiClient, people: dict, ollama: ScriptedOllama) -> None:
    added = await add_ollama(api, ollama.url)
    assert added["llava:7b"]["modalities"] == "text,image"  # from its `vision` capability
    await api.post(f"/api/v1/models/{added['llava:7b']['id']}/default", token="alice")
    agent = await make_agent(api)
    png = b"\x89PNG\r\n\x1a\nfake"
    form = aiohttp.FormData()
    form.add_field("conversationId", "v1")
    form.add_field("file", png, filename="cat.png", content_type="image/png")
    r = await api.post("/api/v1/chat/upload", data=form, token="alice")
    assert r.status == 200, r.body
    parts = [{"type": "text", "text": "what is this?"}, {"type": "image", "url": r.data["url"]}]
    ollama.enqueue(Script(text="A cat."))
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "v1", "contentParts": parts}, token="alice")
    assert events[-1].data["status"] == "completed", events
    user = ollama.chat_requests()[-1]["messages"][-1]
    assert user["content"] == "what is this?" and user["images"] == [base64.b64encode(png).decode()]


async def test_embeddings_go_through_ollamas_embed_endpoint(api: ApiClient, people: dict, ollama: ScriptedOllama) -> None:
    added = await add_ollama(api, ollama.url, keepAlive="1h")
    model_id = added["nomic-embed-text:latest"]["id"]
    r = await api.post(f"/api/v1/models/embedding/{model_id}/test", {"text": "hello world"}, token="alice")
    assert r.status == 200 and r.data["success"] is True, r.body
    assert r.data["dimensions"] == 8
    sent = [r.body for r in ollama.request_log if r.path == "/api/embed"]
    assert sent == [{"model": "nomic-embed-text:latest", "input": ["hello world"], "keep_alive": "1h"}]

    ollama.next_embed_error = (500, "the model failed to embed")
    r = await api.post(f"/api/v1/models/embedding/{model_id}/test", {"text": "again"}, token="alice")
    assert r.status == 200 and r.data["success"] is False and "the model failed to embed" in r.data["message"]


async def test_keep_alive_and_num_ctx_reach_the_request_and_are_validated(api: ApiClient, people: dict, ollama: ScriptedOllama) -> None:
    await add_ollama(api, ollama.url)
    agent = await make_agent(api)
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "k0", "message": "hi"}, token="alice")
    default = ollama.chat_requests()[-1]
    assert default["options"]["num_ctx"] == 8192 and "keep_alive" not in default  # the platform's default window

    r = await api.put("/api/v1/models/lan-ollama/config", {"keepAlive": "30m", "numCtx": 4096}, token="alice")
    assert r.status == 200, r.body
    assert r.data["keepAlive"] == "30m" and r.data["numCtx"] == 4096
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "k1", "message": "hi"}, token="alice")
    sent = ollama.chat_requests()[-1]
    assert sent["keep_alive"] == "30m" and sent["options"]["num_ctx"] == 4096

    r = await api.put("/api/v1/models/lan-ollama/config", {"keepAlive": -1}, token="alice")  # keep loaded
    assert r.status == 200 and r.data["keepAlive"] == -1 and r.data["numCtx"] == 4096
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "k2", "message": "hi"}, token="alice")
    assert ollama.chat_requests()[-1]["keep_alive"] == -1

    for bad, field in (({"keepAlive": "ten minutes"}, "keepAlive"), ({"numCtx": 10}, "numCtx"), ({"numCtx": "big"}, "numCtx")):
        r = await api.put("/api/v1/models/lan-ollama/config", bad, token="alice")
        assert r.status == 400 and r.msg.startswith(field + ":"), (bad, r.body)
    r = await api.post(
        "/api/v1/models/custom-providers",
        {"providerId": "oai", "name": "oai", "baseUrl": "http://127.0.0.1:9/v1", "protocol": "openai", "keepAlive": "5m"},
        token="alice",
    )
    assert r.status == 400 and r.msg.startswith("keepAlive:"), r.body

    r = await api.put("/api/v1/models/lan-ollama/config", {"keepAlive": None, "numCtx": None}, token="alice")
    assert r.status == 200 and r.data["keepAlive"] is None and r.data["numCtx"] is None


@pytest.mark.config(ollama_num_ctx_default=2048)
async def test_the_default_num_ctx_setting_sizes_the_request_and_the_context_window(api: ApiClient, people: dict, ollama: ScriptedOllama) -> None:
    await add_ollama(api, ollama.url)
    agent = await make_agent(api)
    for n in range(6):  # each turn alone fits; together they are far past 2,048 tokens
        ollama.enqueue(Script(text="noted " * 150))
        events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "w1", "message": f"turn {n}: " + "word " * 400}, token="alice")
        assert events[-1].data["status"] == "completed", events
    last = ollama.chat_requests()[-1]
    assert last["options"]["num_ctx"] == 2048
    sent_words = sum(len(str(m.get("content") or "").split()) for m in last["messages"])
    assert sent_words < 2048, sent_words  # the context builder fitted the turn into Ollama's window
    summaries = [r for r in ollama.chat_requests() if r["stream"] is False]  # older turns compacted by a whole call
    assert summaries and summaries[-1]["options"]["num_ctx"] == 2048


async def test_an_ollama_error_ends_the_turn_in_an_error_frame(api: ApiClient, people: dict, ollama: ScriptedOllama, caplog: pytest.LogCaptureFixture) -> None:
    await add_ollama(api, ollama.url)
    agent = await make_agent(api)
    faults = [
        Script(error_status=404, error_message='model "llama3.2:latest" not found, try pulling it first'),  # before any output
        Script(text="partial answer", stream_error="an error was encountered while running the model"),  # mid-stream, status 200
    ]
    for n, script in enumerate(faults):
        ollama.enqueue(script)
        events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": f"e{n}", "message": "hi"}, token="alice")
        errors = [e.data for e in events if e.event == "error"]
        assert len(errors) == 1 and errors[0]["errorId"] in errors[0]["message"], events
        assert ollama.url.split("//")[1] not in json.dumps(errors) and "pulling" not in json.dumps(errors)
        assert events[-1].event == "done" and events[-1].data["status"] == "failed"
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "try pulling it first" in logged and "error in stream: an error was encountered while running the model" in logged


async def test_the_server_refuses_what_ollama_refuses_and_the_platform_never_sends_it(api: ApiClient, people: dict, ollama: ScriptedOllama) -> None:
    async with aiohttp.ClientSession() as s:

        async def chat(body: Any) -> tuple[int, Any]:
            async with s.post(ollama.url + "/api/chat", json=body) as r:
                return r.status, await r.json(content_type=None)

        ok = {"model": "llama3.2", "messages": [{"role": "user", "content": "hi"}], "stream": False}
        assert (await chat(ok))[0] == 200
        bad = [
            ({**ok, "model": ""}, 400, "model is required"),
            ({**ok, "model": "nope"}, 404, "model 'nope' not found"),
            ({**ok, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}, 400, "content of type string"),
            ({**ok, "messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}]}, 400, "arguments"),
            ({**ok, "messages": [{"role": "user", "content": "hi", "images": ["data:image/png;base64,AAAA"]}]}, 400, "base64"),
            ({**ok, "options": {"num_ctx": "4096"}}, 400, 'option "num_ctx" must be of type integer'),
            ({**ok, "keep_alive": "10"}, 400, "missing unit"),
            ({**ok, "think": "very"}, 400, "invalid think value"),
            ({**ok, "think": True}, 400, "does not support thinking"),
            ({**ok, "model": "llava:7b", "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}, 400, "does not support tools"),
            ({**ok, "model": "nomic-embed-text"}, 400, "does not support chat"),
        ]
        for body, status, text in bad:
            got = await chat(body)
            assert got[0] == status and text in got[1]["error"], (body, got)
        async with s.post(ollama.url + "/api/embed", json={"model": "nomic-embed-text", "input": [1, 2]}) as r:
            assert r.status == 400 and (await r.json())["error"] == "invalid input type"
    ollama.request_log.clear()

    # A model without the tools capability (llava) is not offered the agent's tools, and still answers.
    added = await add_ollama(api, ollama.url)
    await api.post(f"/api/v1/models/{added['llava:7b']['id']}/default", token="alice")
    agent = await make_agent(api)
    ollama.enqueue(Script(text="A picture of a cat."))
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "o2", "message": "hi"}, token="alice")
    assert events[-1].data["status"] == "completed", events
    assert text_of(events) == "A picture of a cat."
    assert "tools" not in ollama.chat_requests()[-1]  # Ollama answers 400 "does not support tools" otherwise


async def test_an_upgraded_install_moves_the_untouched_builtin_ollama_entry_to_ollamas_api(tmp_path: Any) -> None:
    data = tmp_path / "data"
    first = await start_server(str(data))
    await first.stop()
    db = sqlite3.connect(first.config.db_path)  # what an older version seeded: Ollama through its OpenAI route
    db.execute("UPDATE model_provider SET protocol = 'openai', base_url = 'http://127.0.0.1:11434/v1' WHERE id = 'ollama'")
    db.execute("ALTER TABLE model_provider DROP COLUMN options")
    db.execute("DELETE FROM schema_migration WHERE name = 'models_0003_ollama_options'")
    db.commit()
    db.close()
    second = await start_server(str(data))
    try:
        people = await create_personas(second.client)
        assert people
        catalog = {p["id"]: p for p in (await second.client.get("/api/v1/models/catalog", token="alice")).data}
        assert catalog["ollama"]["protocol"] == "ollama" and catalog["ollama"]["baseUrl"] == "http://127.0.0.1:11434"
        assert catalog["ollama"]["numCtx"] is None
    finally:
        await second.stop()


async def test_the_client_reads_lines_cut_across_writes_and_fails_a_stream_without_its_done_line(ollama: ScriptedOllama) -> None:
    client = make_client("ollama", ollama.url + "/v1", None, settings=ProviderSettings(keep_alive="5m"))  # a pasted /v1 is dropped
    req = ChatRequest(model="llama3.2:latest", messages=[ChatMessage("user", "hi")])
    try:
        ollama.split_lines = True
        ollama.enqueue(Script(text=["Grüße ", "aus ", "Köln"], prompt_tokens=5, completion_tokens=3))
        events = [ev async for ev in client.stream_chat(req)]
        assert "".join(ev.text for ev in events if isinstance(ev, TextDelta)) == "Grüße aus Köln"
        assert Usage(5, 3) in events and isinstance(events[-1], Finish) and events[-1].reason == "stop"

        ollama.split_lines = False
        ollama.enqueue(Script(text="cut short", no_done=True))
        with pytest.raises(LlmError, match="no done line"):
            [ev async for ev in client.stream_chat(req)]
        result = await client.chat(req)  # stream: false, one JSON object
        assert result.content.startswith("Echo: hi") and result.finish_reason == "stop"
        assert ollama.chat_requests()[-1]["stream"] is False and ollama.chat_requests()[-1]["keep_alive"] == "5m"
    finally:
        await client.close()
