"""Client doors: the official `openai` SDK and the `mcp` SDK's client reach the agents and the wiki of a real server."""
from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, AsyncIterator

import httpx2
import mcp
import openai
import aiohttp
import pytest

from tests.helpers.chat import ChatEnv, make_agent
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.process import ADMIN, ServerProcess
from tests.helpers.server import RunningServer
from tests.helpers.wiki import add_text, make_kb, page, pages_answer, wait_idle


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


async def pat(env: ChatEnv, who: str) -> str:
    r = await env.api.post("/api/v1/auth/tokens", {"name": "client"}, token=who)
    assert r.status == 200, r.body
    return r.data["token"]


def openai_client(server: RunningServer, token: str, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{server.url}/api/v1/openai/v1", api_key=token, default_headers=headers or None, max_retries=0)


@contextlib.asynccontextmanager
async def mcp_client(server: RunningServer | ServerProcess, token: str, **headers: str) -> AsyncIterator[Any]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **headers}, timeout=30) as http:
        transport = mcp.client.streamable_http.streamable_http_client(f"{server.url}/api/v1/mcp/serve", http_client=http)
        async with mcp.Client(transport, read_timeout_seconds=30) as client:
            yield client


async def door_conversations(env: ChatEnv) -> list[dict[str, Any]]:
    r = await env.api.get("/api/v1/conversations", token="alice")
    assert r.status == 200, r.body
    return [c for c in r.data if c["source"] == "openai_api"]


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def test_the_openai_sdk_lists_agents_chats_with_and_without_streaming_and_continues_one_conversation(
    env: ChatEnv, server: RunningServer
) -> None:
    client = openai_client(server, await pat(env, "alice"))
    models = [m.id for m in (await client.models.list()).data]
    assert models == [f"helper-{env.agent_id}"]
    model = models[0]

    env.llm.enqueue(Script(text="Hello from the agent", prompt_tokens=7, completion_tokens=3))
    first = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    assert first.object == "chat.completion" and first.choices[0].message.content == "Hello from the agent"
    assert first.choices[0].finish_reason == "stop"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens, first.usage.total_tokens) == (7, 3, 10)

    env.llm.enqueue(Script(text="Second answer, streamed", prompt_tokens=20, completion_tokens=4))
    history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
               {"role": "assistant", "content": "Hello from the agent"}, {"role": "user", "content": "and again?"}]
    stream = await client.chat.completions.create(model=model, messages=history, stream=True, stream_options={"include_usage": True})
    chunks = [c async for c in stream]
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Second answer, streamed"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == 20

    # the same thread is one conversation: the re-sent history was not stored again, and the model saw it
    convs = await door_conversations(env)
    assert len(convs) == 1
    stored = await env.messages(convs[0]["conversationId"])
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "hi"), ("assistant", "Hello from the agent"), ("user", "and again?"), ("assistant", "Second answer, streamed")]
    sent = env.llm.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] in ("user", "assistant")][-3:] == ["hi", "Hello from the agent", "and again?"]

    usage = (await env.api.get("/api/v1/token-usage", params={"groupBy": "source"}, token="alice")).data
    by = {i["source"]: i for i in usage["items"]}
    assert by["openai_api"]["promptTokens"] == 27 and by["openai_api"]["completionTokens"] == 7


async def test_a_conversation_header_or_the_user_field_keeps_threads_apart(env: ChatEnv, server: RunningServer) -> None:
    client = openai_client(server, await pat(env, "alice"))
    model = f"helper-{env.agent_id}"
    for thread in ("a", "b", "a"):
        env.llm.enqueue(Script(text=f"answer in {thread}"))
        await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "same opening"}],
                                             extra_headers={"X-Conversation-Id": thread})
    env.llm.enqueue(Script(text="for the user field"))
    r = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "same opening"}], user="u-7")
    assert r.choices[0].message.content == "for the user field"
    convs = await door_conversations(env)
    assert sorted(c["messageCount"] for c in convs) == [2, 2, 4]


async def test_errors_come_in_the_openai_shape_with_their_statuses(env: ChatEnv, server: RunningServer) -> None:
    client = openai_client(server, await pat(env, "alice"))
    with pytest.raises(openai.NotFoundError) as missing:
        await client.chat.completions.create(model="nobody-999", messages=[{"role": "user", "content": "hi"}])
    assert missing.value.code == "model_not_found" and missing.value.type == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as bad:
        await client.chat.completions.create(model=f"helper-{env.agent_id}", messages=[{"role": "assistant", "content": "hi"}])
    assert "last message" in bad.value.message
    with pytest.raises(openai.AuthenticationError):
        await openai_client(server, "mc_not-a-token").models.list()
    raw = await env.api.post("/api/v1/openai/v1/chat/completions", {"messages": []}, token="alice")
    assert raw.status == 400 and set(raw.body["error"]) == {"message", "type", "param", "code"}
    assert raw.body["error"]["type"] == "invalid_request_error"


async def test_a_second_request_while_the_threads_turn_runs_is_a_409_and_a_client_that_leaves_does_not_stop_the_turn(
    env: ChatEnv, server: RunningServer
) -> None:
    client = openai_client(server, await pat(env, "alice"))
    model, thread = f"helper-{env.agent_id}", {"X-Conversation-Id": "busy"}
    env.llm.enqueue(Script(text="one two three four five six", delay_s=0.2))
    stream = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "count"}], stream=True,
                                                  extra_headers=thread)
    first = await stream.__anext__()
    assert first.choices[0].delta.role == "assistant"
    with pytest.raises(openai.ConflictError) as busy:
        await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "again"}], extra_headers=thread)
    assert busy.value.code == "conversation_busy"
    await stream.close()  # the client leaves mid-answer: the turn runs on and its answer is stored
    for _ in range(100):
        stored = await env.messages((await door_conversations(env))[0]["conversationId"])
        if len(stored) == 2 and stored[1]["content"] == "one two three four five six":
            break
        await asyncio.sleep(0.1)
    assert [m["content"] for m in stored] == ["count", "one two three four five six"]


async def test_an_image_part_reaches_the_agent_and_a_web_image_url_is_refused(env: ChatEnv, server: RunningServer) -> None:
    client = openai_client(server, await pat(env, "alice"))
    model = f"helper-{env.agent_id}"
    image = "data:image/png;base64," + PNG
    env.llm.enqueue(Script(text="A red dot."))
    r = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": [
        {"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": image}}]}])
    assert r.choices[0].message.content == "A red dot."
    stored = await env.messages((await door_conversations(env))[0]["conversationId"])
    assert stored[0]["content"] == "what is this?"
    assert [p.get("url") for p in stored[0]["contentParts"] if p["type"] == "image"] == [image]
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model=model, messages=[{"role": "user", "content": [
            {"type": "text", "text": "and this?"}, {"type": "image_url", "image_url": {"url": "http://example.com/x.png"}}]}])


async def test_a_tool_call_waiting_for_approval_ends_the_answer_with_where_it_is_decided(env: ChatEnv, server: RunningServer) -> None:
    env.llm.enqueue(Script(text="Saving.", tool_calls=[ScriptedToolCall("write_file", {"path": "note.txt", "content": "hello"})]))
    client = openai_client(server, await pat(env, "alice"))
    model = f"helper-{env.agent_id}"
    first = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "save a note"}])
    assert "The tool call 'write_file' is waiting for approval in the console's Approvals" in first.choices[0].message.content
    conv = (await door_conversations(env))[0]

    env.llm.enqueue(Script(text="Saved it."))
    resumed = await env.stream("/approve", conversation_id=conv["conversationId"])  # decided in the console
    assert resumed[-1].data["status"] == "completed"
    env.llm.enqueue(Script(text="It says hello."))
    history = [{"role": "user", "content": "save a note"}, {"role": "assistant", "content": first.choices[0].message.content},
               {"role": "user", "content": "what is in it?"}]
    later = await client.chat.completions.create(model=model, messages=history)
    assert later.choices[0].message.content == "It says hello."
    assert env.llm.requests[-1]["messages"][-1]["content"] == "what is in it?"


async def test_the_mcp_client_lists_tools_gets_a_cited_answer_from_wiki_search_and_asks_an_agent(
    env: ChatEnv, server: RunningServer
) -> None:
    kb_id = await make_kb(env.api, token="alice")
    env.llm.enqueue(Script(text=pages_answer(page("green-tea", "Green tea", "# Green tea\n\nGreen tea is steeped at 80 degrees."))))
    await add_text(env.api, kb_id, "Tea notes", "Green tea is steeped at 80 degrees.", token="alice")
    await wait_idle(env.api, kb_id)
    token = await pat(env, "alice")
    async with mcp_client(server, token) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"ask_agent", "wiki_search", "wiki_read", "list_agents"}

        found = await client.call_tool("wiki_search", {"query": "green tea steeped"})
        assert not found.is_error, text(found)
        assert "[1] Green tea" in text(found) and f"[1] Green tea: wiki://{kb_id}/green-tea" in text(found)

        read = await client.call_tool("wiki_read", {"knowledge_base": kb_id, "slug": "green-tea"})
        assert "80 degrees" in text(read) and f"wiki://{kb_id}/green-tea" in text(read)
        listed = (await client.list_resources()).resources
        assert [str(r.uri) for r in listed] == [f"wiki://{kb_id}/green-tea"]
        resource = await client.read_resource(f"wiki://{kb_id}/green-tea")
        assert "80 degrees" in resource.contents[0].text

        agents = text(await client.call_tool("list_agents", {}))
        assert f"helper-{env.agent_id}" in agents
        env.llm.enqueue(Script(text="Tea is good.", prompt_tokens=5, completion_tokens=2))
        asked = await client.call_tool("ask_agent", {"agent": f"helper-{env.agent_id}", "message": "tea?", "conversation": "mcp-1"})
        assert not asked.is_error and text(asked).startswith("Tea is good.") and "(conversation: mcp-1)" in text(asked)

        # an agent with knowledge: the passages its answer was given come back as the answer's sources
        r = await env.api.put(f"/api/v1/agents/{env.agent_id}", {"primaryKbId": kb_id}, token="alice")
        assert r.status == 200, r.body
        env.llm.enqueue(Script(text="At 80 degrees [1].", prompt_tokens=9, completion_tokens=3))
        cited = await client.call_tool("ask_agent", {"agent": f"helper-{env.agent_id}", "message": "How hot is green tea steeped?"})
        assert "80 degrees" in str(env.llm.requests[-1]["messages"][0]["content"])  # retrieval reached the model
        assert text(cited).startswith("At 80 degrees [1].") and "\nSources:\n[1] " in text(cited), text(cited)
        assert f"wiki://{kb_id}/green-tea" in text(cited), text(cited)
    usage = (await env.api.get("/api/v1/token-usage", params={"groupBy": "source"}, token="alice")).data
    assert {i["source"]: i for i in usage["items"]}["mcp"]["completionTokens"] == 2 + 3


async def rpc(env: ChatEnv, token: str, method: str, params: dict[str, Any], version: str) -> dict[str, Any]:
    """One JSON-RPC request as a client of the 2025 (handshake) protocol sends it; the SSE answer's message."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
    r = await env.api.post("/api/v1/mcp/serve", {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, token=token,
                           headers=headers)
    assert r.status == 200, r.raw
    assert r.headers["Content-Type"].startswith("text/event-stream"), r.headers
    data = [line[5:].strip() for line in r.raw.decode().splitlines() if line.startswith("data:") and line[5:].strip()]
    return json.loads(data[-1])


async def test_a_client_of_the_2025_handshake_protocol_initializes_and_calls_tools_as_its_own_user(env: ChatEnv) -> None:
    version = "2025-06-18"  # what Claude Desktop and most MCP clients of 2025 speak (initialize first)
    alice, carol = await pat(env, "alice"), await pat(env, "carol")
    r = await env.api.post("/api/v1/agents", {"name": "Secret", "systemPrompt": "x", "agentType": "react"}, token="dave",
                           workspace=env.people["dave"]["workspace"])
    assert r.status == 200, r.body
    init = await rpc(env, alice, "initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
                     version)
    assert init["result"]["protocolVersion"] == version and init["result"]["serverInfo"]["name"] == "agent-platform"
    listed = await rpc(env, alice, "tools/list", {}, version)
    assert {t["name"] for t in listed["result"]["tools"]} == {"ask_agent", "wiki_search", "wiki_read", "list_agents"}
    for token, sees in ((alice, True), (carol, False), (alice, True)):
        agents = await rpc(env, token, "tools/call", {"name": "list_agents", "arguments": {}}, version)
        assert ("Secret" in agents["result"]["content"][0]["text"]) is sees


async def test_a_viewers_pat_cannot_reach_a_workspace_it_is_not_in_through_either_door(env: ChatEnv, server: RunningServer) -> None:
    dave_ws = env.people["dave"]["workspace"]
    r = await env.api.post("/api/v1/agents", {"name": "Secret", "systemPrompt": "x", "agentType": "react"}, token="dave",
                           workspace=dave_ws)
    assert r.status == 200, r.body
    theirs = r.data["id"]
    kb = await env.api.post("/api/v1/wiki/knowledge-bases", {"name": "Private"}, token="dave", workspace=dave_ws)
    assert kb.status == 200, kb.body
    carol = await pat(env, "carol")

    client = openai_client(server, carol)
    assert [m.id for m in (await client.models.list()).data] == [f"helper-{env.agent_id}"]  # a viewer may chat in workspace 1
    with pytest.raises(openai.NotFoundError):
        await client.chat.completions.create(model=f"secret-{theirs}", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.PermissionDeniedError):
        await openai_client(server, carol, **{"X-Workspace-Id": str(dave_ws)}).models.list()
    assert env.llm.requests == []

    alice = await pat(env, "alice")
    async with mcp_client(server, alice) as admins, mcp_client(server, carol) as mcp_session:
        assert "Secret" in text(await admins.call_tool("list_agents", {}))  # a global admin sees every workspace
        assert "Secret" not in text(await mcp_session.call_tool("list_agents", {}))  # each request acts as its own token's user
        assert "Secret" in text(await admins.call_tool("list_agents", {}))
        asked = await mcp_session.call_tool("ask_agent", {"agent": f"secret-{theirs}", "message": "hi"})
        assert asked.is_error and "does not exist" in text(asked)
        read = await mcp_session.call_tool("wiki_search", {"query": "anything", "knowledge_base": kb.data["id"]})
        assert read.is_error and "not found" in text(read)
        assert "Secret" not in text(await mcp_session.call_tool("list_agents", {}))
    with pytest.raises(Exception):
        async with mcp_client(server, carol, **{"X-Workspace-Id": str(dave_ws)}) as refused:
            await refused.list_tools()
    raw = await env.api.post("/api/v1/mcp/serve", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, token=carol,
                             workspace=dave_ws)
    assert raw.status == 403
    assert env.llm.requests == []


async def test_both_doors_are_documented_under_their_own_tags_and_mcp_offers_no_get_stream(env: ChatEnv) -> None:
    doc = (await env.api.get("/v3/api-docs", token="alice")).body
    assert doc["paths"]["/api/v1/openai/v1/chat/completions"]["post"]["tags"] == ["OpenAI-compatible API"]
    assert doc["paths"]["/api/v1/openai/v1/models"]["get"]["responses"]["404"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/OpenAiError"}
    assert "OpenAiError" in doc["components"]["schemas"]
    assert doc["paths"]["/api/v1/mcp/serve"]["post"]["tags"] == ["MCP server"]
    r = await env.api.get("/api/v1/mcp/serve", token="alice", headers={"Accept": "text/event-stream"})
    assert r.status == 405


async def test_a_server_started_as_its_own_process_serves_the_sync_openai_client_and_the_mcp_client(
    tmp_path: Any, llm: ScriptedOpenAI
) -> None:
    server = ServerProcess(str(tmp_path / "data"))
    async with aiohttp.ClientSession() as session:
        try:
            await server.start()
            api = ApiClient(server.url, session)
            r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
            api.tokens["admin"] = r.data["token"]
            await use_fake_openai(api, llm.url, token="admin")
            agent = await make_agent(api, token="admin")
            token = (await api.post("/api/v1/auth/tokens", {"name": "desk"}, token="admin")).data["token"]
            llm.enqueue(Script(text="From a process."), Script(text="Streamed from a process."))

            def sync_client() -> tuple[list[str], str, str]:  # the blocking client, in a thread: the test's loop serves the model
                client = openai.OpenAI(base_url=f"{server.url}/api/v1/openai/v1", api_key=token, max_retries=0)
                ids = [m.id for m in client.models.list().data]
                history: list[Any] = [{"role": "user", "content": "hello"}]
                whole = client.chat.completions.create(model=f"helper-{agent}", messages=history).choices[0].message.content or ""
                history += [{"role": "assistant", "content": whole}, {"role": "user", "content": "more"}]
                with client.chat.completions.create(model=f"helper-{agent}", messages=history, stream=True) as stream:
                    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
                return ids, whole, streamed

            ids, whole, streamed = await asyncio.to_thread(sync_client)
            assert f"helper-{agent}" in ids and (whole, streamed) == ("From a process.", "Streamed from a process.")
            async with mcp_client(server, token) as client:
                assert "ask_agent" in {t.name for t in (await client.list_tools()).tools}
        finally:
            server.terminate()


async def test_an_mcp_server_that_fails_to_start_answers_503_and_the_next_request_starts_it(
    env: ChatEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    from platform_server.features.doors import mcp_tools

    def broken(platform: Any) -> Any:
        raise RuntimeError("no server today")

    token = await pat(env, "alice")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    with monkeypatch.context() as patch:
        patch.setattr(mcp_tools, "session_manager", broken)
        r = await env.api.post("/api/v1/mcp/serve", body, token=token, headers=headers)
        assert r.status == 503 and r.body["msg"] == "The MCP server could not start"
    r = await env.api.post("/api/v1/mcp/serve", body, token=token, headers=headers)
    assert r.status == 200 and b"list_agents" in r.raw
