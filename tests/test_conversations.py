"""Conversation views and housekeeping through the HTTP API."""
from __future__ import annotations

import pytest

from tests.helpers.chat import ChatEnv, chat_env
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.openapi_inputs import conforms


@pytest.fixture
async def env(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> ChatEnv:
    return await chat_env(api, people, llm, icon="🤖")


async def test_a_conversation_view_carries_every_field(env: ChatEnv) -> None:
    await env.stream("Plan a trip to the mountains with friends next summer please", conversation_id="trip")
    r = await env.api.get("/api/v1/conversations", token="alice")
    assert r.status == 200
    (vo,) = r.data
    assert vo["conversationId"] == "trip"
    assert vo["title"] == "Plan a trip to the mountains with friends next summer please"[:50]
    assert vo["agentId"] == env.agent_id and vo["agentName"] == "Helper" and vo["agentIcon"] == "🤖"
    assert vo["username"] == "alice" and vo["messageCount"] == 2
    assert vo["lastMessage"].startswith("Echo: Plan a trip")
    assert vo["status"] == "active" and vo["streamStatus"] == "idle" and vo["source"] == "web"
    assert vo["pinned"] == 0 and vo["archived"] == 0 and vo["lastActiveTime"].endswith("Z")


async def test_message_history_has_three_modes(env: ChatEnv) -> None:
    for i in range(3):
        await env.stream(f"m{i}")
    all_msgs = await env.messages()
    assert [m["content"] for m in all_msgs] == ["m0", "Echo: m0", "m1", "Echo: m1", "m2", "Echo: m2"]
    latest = await env.api.get("/api/v1/conversations/c1/messages", params={"limit": "2"}, token="alice")
    assert [m["content"] for m in latest.data["messages"]] == ["m2", "Echo: m2"] and latest.data["hasMore"] is True
    before = await env.api.get("/api/v1/conversations/c1/messages",
                               params={"limit": "3", "beforeId": latest.data["messages"][0]["id"]}, token="alice")
    assert [m["content"] for m in before.data["messages"]] == ["Echo: m0", "m1", "Echo: m1"]
    assert before.data["hasMore"] is True
    # beforeId alone: every message before it, as a list (the first mode, cut at the id; seed 11 sent it alone)
    earlier = await env.api.get("/api/v1/conversations/c1/messages", params={"beforeId": latest.data["messages"][0]["id"]}, token="alice")
    assert [m["content"] for m in earlier.data] == ["m0", "Echo: m0", "m1", "Echo: m1"], earlier.body
    bad = await env.api.get("/api/v1/conversations/c1/messages", params={"limit": "x"}, token="alice")
    assert bad.status == 400


async def test_rating_an_answer_answers_the_typed_message_and_only_answers_can_be_rated(env: ChatEnv) -> None:
    await env.stream("rate me")
    question, answer = await env.messages()
    url = f"/api/v1/conversations/c1/messages/{answer['id']}/rating"
    up = await env.api.put(url, {"rating": "up"}, token="alice")  # checked against MessageView on the way in
    assert up.status == 200 and up.data["id"] == answer["id"] and up.data["metadata"]["rating"] == "up"
    cleared = await env.api.put(url, {"rating": None}, token="alice")
    assert cleared.status == 200 and "rating" not in cleared.data["metadata"]
    refused = await env.api.put(f"/api/v1/conversations/c1/messages/{question['id']}/rating", {"rating": "down"}, token="alice")
    assert refused.status == 409 and "assistant" in refused.body["msg"]  # the stored message's role, not the body
    doc = (await env.api.get("/v3/api-docs")).body
    assert "409" in doc["paths"]["/api/v1/conversations/{conversationId}/messages/{messageId}/rating"]["put"]["responses"]


async def test_rename_pin_model_and_page_with_keyword_search(env: ChatEnv) -> None:
    await env.stream("about apples", conversation_id="a")
    await env.stream("about pears", conversation_id="p")
    r = await env.api.put("/api/v1/conversations/a/title", {"title": "Fruit"}, token="alice")
    assert r.data["title"] == "Fruit"
    r = await env.api.put("/api/v1/conversations/p/pin", {"pinned": True}, token="alice")
    assert r.data["pinned"] == 1
    r = await env.api.put("/api/v1/conversations/p/model", {"modelProvider": "fake", "modelName": "scripted"}, token="alice")
    assert r.data["modelProvider"] == "fake"
    r = await env.api.put("/api/v1/conversations/p/model", {"modelProvider": "fake"}, token="alice")
    assert r.status == 400
    # both or neither, as the document now states it (an anyOf): schemathesis sent a modelName alone as valid
    body = (await env.api.get("/v3/api-docs")).body["components"]["schemas"]["ModelRequest"]
    assert body["anyOf"][0]["required"] == ["modelProvider", "modelName"] and body["anyOf"][1]["properties"]["modelName"]["enum"] == [None, ""]
    assert body["anyOf"][0]["properties"]["modelProvider"]["type"] == "string"  # a null provider is not "both"
    r = await env.api.put("/api/v1/conversations/p/model", {"modelProvider": None, "modelName": "scripted"}, token="alice")
    assert r.status == 400, r.body
    r = await env.api.put("/api/v1/conversations/p/model", {"modelProvider": "", "modelName": None}, token="alice")
    assert r.status == 200 and r.data["modelProvider"] is None, r.body  # neither: the agent's default again
    page = await env.api.get("/api/v1/conversations/page", params={"keyword": "pears"}, token="alice")
    assert [c["conversationId"] for c in page.data["records"]] == ["p"] and page.data["total"] == 1
    page = await env.api.get("/api/v1/conversations/page", params={"size": "1"}, token="alice")
    assert page.data["records"][0]["conversationId"] == "p" and page.data["pages"] == 2
    assert (await env.api.get("/api/v1/conversations/page", params={"page": "0"}, token="alice")).status == 400
    assert (await env.api.put("/api/v1/conversations/a/title", {"title": ""}, token="alice")).status == 400


async def test_clear_delete_and_batch_delete(env: ChatEnv) -> None:
    for cid in ("x", "y", "z"):
        await env.stream("hi", conversation_id=cid)
    assert (await env.api.delete("/api/v1/conversations/x/messages", token="alice")).status == 200
    assert await env.messages("x") == []
    assert (await env.api.delete("/api/v1/conversations/x", token="alice")).status == 200
    assert (await env.api.get("/api/v1/conversations/x/messages", token="alice")).status == 404
    too_many = [f"id{i}" for i in range(201)]
    r = await env.api.post("/api/v1/conversations/batch-delete", {"conversationIds": too_many}, token="alice")
    assert r.status == 400
    r = await env.api.post("/api/v1/conversations/batch-delete", {"conversationIds": ["y", "z", "y", "unknown"]}, token="alice")
    assert r.data == {"deleted": 2}
    assert (await env.api.get("/api/v1/conversations", token="alice")).data == []


async def test_the_trajectory_is_plain_text_in_emission_order(env: ChatEnv) -> None:
    from tests.helpers.fake_openai import ScriptedToolCall

    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("get_current_time", {})]), Script(text="done now"))
    await env.stream("what time")
    r = await env.api.get("/api/v1/conversations/c1/trajectory", token="alice")
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
    answer = (await env.api.get("/v3/api-docs")).body["paths"]["/api/v1/conversations/{conversationId}/trajectory"]["get"]
    assert list(answer["responses"]["200"]["content"]) == ["text/plain"]  # documented as what it sends
    text = r.raw.decode()
    order = [text.index("user: what time"), text.index("tool_call get_current_time"),
             text.index("tool_result get_current_time"), text.index("assistant (completed): done now")]
    assert order == sorted(order)


async def test_conversations_of_another_workspace_are_not_listed(env: ChatEnv) -> None:
    await env.stream("hi")
    r = await env.api.get("/api/v1/conversations", token="alice", workspace=env.people["dave"]["workspace"])
    assert r.data == []


async def test_the_page_is_kept_between_changes_yet_follows_every_change_and_the_passing_of_time(env: ChatEnv, monkeypatch) -> None:
    import datetime as dt

    from platform_server.features.conversations import service

    await env.stream("first", conversation_id="kept")
    page = await env.api.get("/api/v1/conversations/page", token="alice")
    assert [(c["conversationId"], c["messageCount"], c["status"]) for c in page.data["records"]] == [("kept", 2, "active")]
    await env.stream("second", conversation_id="kept")  # a change: the kept page is not answered again
    page = await env.api.get("/api/v1/conversations/page", token="alice")
    assert page.data["records"][0]["messageCount"] == 4
    r = await env.api.put("/api/v1/agents/" + env.agent_id, {"name": "Renamed"}, token="alice")
    assert r.status == 200, r.body
    page = await env.api.get("/api/v1/conversations/page", token="alice")
    assert page.data["records"][0]["agentName"] == "Renamed"
    now = service.utcnow()
    monkeypatch.setattr(service, "utcnow", lambda: now + service.ACTIVE_WINDOW + dt.timedelta(minutes=1))
    page = await env.api.get("/api/v1/conversations/page", token="alice")  # nothing was written, time passed
    assert page.data["records"][0]["status"] == "closed"


async def test_a_page_number_the_document_allows_is_an_empty_page_not_a_refusal(env: ChatEnv) -> None:
    """`page` is a documented integer from 1: a page past the last (its offset beyond SQLite's 64-bit OFFSET too)
    answered 400 `Numeric value out of range`; it is an empty page with the total, with or without a keyword."""
    await env.stream("hello", conversation_id="c-page")
    for query in ("page=99999999999999999999", "page=9223372036854775807&size=50", "page=99999999999999999999&keyword=hello"):
        r = await env.api.get(f"/api/v1/conversations/page?{query}", token="alice")
        assert r.status == 200 and r.data["records"] == [] and r.data["total"] == 1, (query, r.body)


async def test_a_batch_delete_states_and_checks_its_200_ids_as_sent_and_summarizing_nothing_is_a_409(env: ChatEnv) -> None:
    """201 ids (200 unique) were taken although the document's rule is the server's 200: it states maxItems 200 and the
    server counts the ids as sent. A conversation with no messages left cannot be summarized: its state, a 409."""
    doc = (await env.api.get("/v3/api-docs")).body
    body = {"conversationIds": [f"id{i}" for i in range(200)] + ["id0"]}
    r = await env.api.post("/api/v1/conversations/batch-delete", body, token="alice")
    assert r.status == 400 and not conforms(doc, "BatchDeleteRequest", body), r.body
    assert conforms(doc, "BatchDeleteRequest", {"conversationIds": body["conversationIds"][:200]})
    await env.stream("hi", conversation_id="emptied")
    assert (await env.api.delete("/api/v1/conversations/emptied/messages", token="alice")).status == 200
    r = await env.api.post(f"/api/v1/memory/{env.agent_id}/summarize/emptied", token="alice")
    assert r.status == 409 and r.msg == "The conversation has no messages to summarize", r.body
