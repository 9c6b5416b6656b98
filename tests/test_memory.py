"""Memory facts: extraction from conversations, contradictions, feedback, forgetting, isolation."""
from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script
from tests.helpers.memory import base, fact, folder, summarize


async def facts_of(env: ChatEnv, token: str = "alice", **params: Any) -> list[dict[str, Any]]:
    r = await env.api.get(f"{base(env)}/facts", token=token, params=params or None)
    assert r.status == 200, r.body
    return r.data


async def test_summarize_extracts_facts_into_rows_a_daily_note_and_memory_md(env: ChatEnv, server: Any) -> None:
    r = await summarize(env, [fact("Favorite Color", "The user's favorite color is blue."),
                              fact("home_city", "The user lives in Lisbon.", 0.8)], message="I love blue, I live in Lisbon")
    assert r.status == 200, r.body
    assert r.data["extracted"] == 2 and r.data["model"] == "fake/scripted"
    assert [f["outcome"] for f in r.data["facts"]] == ["created", "created"]
    request = env.llm.requests[-1]
    assert "I live in Lisbon" in request["messages"][1]["content"] and not request.get("stream")
    rows = await facts_of(env)
    assert {f["key"] for f in rows} == {"favorite_color", "home_city"}
    one = next(f for f in rows if f["key"] == "favorite_color")
    assert one["sourceConversationId"] == "c1" and one["status"] == "active" and one["confidence"] == 0.9
    memory = (folder(server, env) / "MEMORY.md").read_text()
    assert "**favorite_color**: The user's favorite color is blue." in memory and "Lisbon" in memory
    notes = list((folder(server, env) / "daily").glob("*.md"))
    assert len(notes) == 1 and "conversation c1" in notes[0].read_text()
    assert r.data["dailyNote"].startswith(f"memory/people/{env.people['alice']['id']}/daily/")
    # The chat runtime now sends it in the system prompt.
    await env.stream("what do you know?", conversation_id="c2")
    assert "The user lives in Lisbon." in env.llm.requests[-1]["messages"][0]["content"]
    # The same statement again reinforces instead of duplicating.
    r = await summarize(env, [fact("home_city", "the user lives in lisbon")], conversation_id="c2", message=None)
    assert r.data["facts"][0]["outcome"] == "reinforced" and r.data["facts"][0]["mentions"] == 2
    assert len(await facts_of(env)) == 2
    events = await env.api.get("/api/v1/audit/events", token="alice", params={"resourceType": "MEMORY_FACT"})
    assert events.data["total"] >= 3


async def test_a_contradicting_fact_opens_a_contradiction_that_each_resolution_settles(env: ChatEnv, server: Any) -> None:
    keys = ["pet", "drink", "editor", "sport"]
    await summarize(env, [fact(k, f"old {k}") for k in keys])
    r = await summarize(env, [fact(k, f"new {k}") for k in keys], message="Things changed")
    assert [f["outcome"] for f in r.data["facts"]] == ["contradicts"] * 4 and len(r.data["contradictions"]) == 4
    open_ = (await env.api.get(f"{base(env)}/facts/contradictions", token="alice")).data
    assert len(open_) == 4
    by_key = {c["factA"]["key"]: c for c in open_}
    assert by_key["pet"]["factA"]["statement"] == "old pet" and by_key["pet"]["factB"]["statement"] == "new pet"
    assert "(disputed)" in (folder(server, env) / "MEMORY.md").read_text()

    async def resolve(key: str, body: dict[str, Any]) -> Any:
        return await env.api.post(f"{base(env)}/facts/contradictions/{by_key[key]['id']}/resolve", body, token="alice")

    assert (await resolve("pet", {"resolution": "KEEP_A"})).data["resolution"] == "KEEP_A"
    assert (await resolve("drink", {"resolution": "KEEP_B"})).data["status"] == "resolved"
    env.llm.enqueue(Script(text="merged editor statement"))
    assert (await resolve("editor", {"resolution": "MERGE"})).status == 200
    assert "old editor" in env.llm.requests[-1]["messages"][1]["content"]
    assert (await resolve("sport", {"resolution": "IGNORE"})).status == 200
    again = await resolve("pet", {"resolution": "KEEP_B"})
    assert again.status == 409 and again.msg == "The contradiction is already resolved"  # its state, not the body
    bad = await resolve("pet", {"resolution": "BOTH"})
    assert bad.status == 400 and bad.msg.startswith("resolution:")

    active = {(f["key"], f["statement"]) for f in await facts_of(env)}
    assert active == {("pet", "old pet"), ("drink", "new drink"), ("editor", "merged editor statement"),
                      ("sport", "old sport"), ("sport", "new sport")}
    assert (await env.api.get(f"{base(env)}/facts/contradictions", token="alice")).data == []
    memory = (folder(server, env) / "MEMORY.md").read_text()
    assert "new pet" not in memory and "old drink" not in memory and "merged editor statement" in memory


async def test_merge_with_a_given_statement_needs_no_model(env: ChatEnv) -> None:
    await summarize(env, [fact("tea", "Likes green tea")])
    await summarize(env, [fact("tea", "Likes black tea")], message="now black")
    c = (await env.api.get(f"{base(env)}/facts/contradictions", token="alice")).data[0]
    calls = len(env.llm.requests)
    r = await env.api.post(f"{base(env)}/facts/contradictions/{c['id']}/resolve",
                           {"resolution": "MERGE", "statement": "Likes green and black tea"}, token="alice")
    assert r.status == 200 and r.data["factA"]["statement"] == "Likes green and black tea"
    assert r.data["factA"]["mentions"] == 2 and r.data["factB"]["status"] == "forgotten"
    assert len(env.llm.requests) == calls


async def test_forget_keeps_the_row_and_rebuilds_memory_md(env: ChatEnv, server: Any) -> None:
    r = await summarize(env, [fact("a", "Fact A"), fact("b", "Fact B")])
    a, b = r.data["facts"]
    r = await env.api.post(f"{base(env)}/facts/{a['id']}/forget", token="alice")
    assert r.status == 200 and r.data["status"] == "forgotten" and r.data["forgottenTime"]
    memory = (folder(server, env) / "MEMORY.md").read_text()
    assert "Fact A" not in memory and "Fact B" in memory
    assert [f["key"] for f in await facts_of(env, status="forgotten")] == ["a"]
    assert len(await facts_of(env, status="all")) == 2
    await env.api.post(f"{base(env)}/facts/{b['id']}/forget", token="alice")
    assert not (folder(server, env) / "MEMORY.md").exists()
    await env.stream("anything?", conversation_id="c9")
    assert "Fact B" not in json.dumps(env.llm.requests[-1]["messages"])
    assert (await env.api.post(f"{base(env)}/facts/123/forget", token="alice")).status == 404
    assert (await env.api.post(f"{base(env)}/facts/abc/forget", token="alice")).msg == \
        "Invalid value for parameter 'factId': expected Long"
    assert (await env.api.get(f"{base(env)}/facts", token="alice", params={"status": "x"})).status == 400
    # the document states the enum, and an empty value is none of it (not "absent"): a 400 as well
    assert (await env.api.get(f"{base(env)}/facts", token="alice", params={"status": ""})).status == 400
    assert (await env.api.get(f"{base(env)}/facts", token="alice", params={"status": " active"})).status == 400  # as sent
    doc = (await env.api.get("/v3/api-docs")).body["paths"]["/api/v1/memory/{agentId}/facts"]["get"]["parameters"]
    assert next(p for p in doc if p["name"] == "status")["schema"]["enum"] == ["active", "forgotten", "all"]


async def test_feedback_counts_votes_and_moves_the_recall_score(env: ChatEnv) -> None:
    r = await summarize(env, [fact("x", "Fact X", 0.5), fact("y", "Fact Y", 0.5)])
    x, _ = r.data["facts"]
    for _ in range(3):
        r = await env.api.post(f"{base(env)}/facts/{x['id']}/feedback", {"value": "HELPFUL"}, token="alice")
    assert r.data["helpfulCount"] == 3
    r = await env.api.post(f"{base(env)}/facts/{x['id']}/feedback", {"value": "UNHELPFUL"}, token="alice")
    assert r.data["unhelpfulCount"] == 1
    bad = await env.api.post(f"{base(env)}/facts/{x['id']}/feedback", {"value": "MEH"}, token="alice")
    assert bad.status == 400 and bad.msg.startswith("value:")
    cands = (await env.api.get(f"{base(env)}/dreaming/candidates", token="alice")).data
    assert [c["key"] for c in cands] == ["x", "y"]
    assert cands[0]["helpfulness"] == pytest.approx(4 / 6, abs=1e-3) and cands[1]["helpfulness"] == 0.5
    assert cands[0]["score"] > cands[1]["score"] and 0.99 < cands[0]["recency"] <= 1
    assert set(cands[0]) >= {"fact", "score", "recency", "frequency", "helpfulness", "confidence"}
    assert (await env.api.get(f"{base(env)}/dreaming/candidates", token="alice", params={"limit": 0})).status == 400
    # documented as an integer: an empty value (or `%00`, which Tornado reads as empty) is none
    assert (await env.api.get(f"{base(env)}/dreaming/candidates", token="alice", params={"limit": ""})).status == 400


async def test_summarize_checks_the_conversation_owner_and_agent(env: ChatEnv, api: ApiClient) -> None:
    await env.stream("bob's secret", token="bob", conversation_id="bobs")
    r = await api.post(f"{base(env)}/summarize/bobs", token="alice")
    assert r.status == 403
    assert (await api.post(f"{base(env)}/summarize/nope", token="alice")).status == 404
    other = (await api.post("/api/v1/agents", {"name": "Other", "agentType": "react"}, token="alice")).data["id"]
    await env.stream("hi", conversation_id="mine")
    r = await api.post(f"/api/v1/memory/{other}/summarize/mine", token="alice")
    assert r.status == 409 and "another agent" in r.msg  # a state of the conversation, documented
    assert (await api.post(f"{base(env)}/summarize/mine", token="carol")).status == 403  # viewer: writes need member


async def test_without_a_chat_model_summarize_answers_2001_and_writes_nothing(env: ChatEnv, api: ApiClient) -> None:
    await env.stream("hello", conversation_id="c1")
    for provider in ("fake", "local"):
        await api.post(f"/api/v1/models/{provider}/disable", token="alice")
    r = await api.post(f"{base(env)}/summarize/c1", token="alice")
    assert r.status == 500 and r.code == 2001 and r.msg == "No chat model configured"
    assert await facts_of(env) == []


async def test_a_model_answer_that_is_not_json_is_a_2001(env: ChatEnv) -> None:
    await env.stream("hello", conversation_id="c1")
    env.llm.enqueue(Script(text="I think the user likes cats."))
    r = await env.api.post(f"{base(env)}/summarize/c1", token="alice")
    assert r.code == 2001 and "JSON" in r.msg
    env.llm.enqueue(Script(text='```json\n{"facts": [{"key": "pet", "statement": "Has a cat"}]}\n```'))
    r = await env.api.post(f"{base(env)}/summarize/c1", token="alice")
    assert r.status == 200 and r.data["facts"][0]["confidence"] == 0.7


async def test_end_users_and_people_each_have_their_own_memory(env: ChatEnv, server: Any, api: ApiClient) -> None:
    r = await summarize(env, [fact("name", "The user's name is Ada.")], conversation_id="e1", endUserId="u1")
    assert r.status == 200 and r.data["endUserId"] == "u1"
    assert await facts_of(env) == []
    assert [f["statement"] for f in await facts_of(env, endUserId="u1")] == ["The user's name is Ada."]
    assert await facts_of(env, endUserId="u2") == []
    assert "Ada" in (folder(server, env, end_user="u1") / "MEMORY.md").read_text()
    await env.stream("hi", conversation_id="e2", endUserId="u2")
    assert "Ada" not in env.llm.requests[-1]["messages"][0]["content"]
    await env.stream("hi again", conversation_id="e1", endUserId="u1")
    assert "Ada" in env.llm.requests[-1]["messages"][0]["content"]
    # bob chats with the same agent and end user id: alice's memory is not his.
    await env.stream("hi", token="bob", conversation_id="b1", endUserId="u1")
    assert "Ada" not in env.llm.requests[-1]["messages"][0]["content"]
    assert await facts_of(env, token="bob", endUserId="u1") == []
    fact_id = (await facts_of(env, endUserId="u1"))[0]["id"]
    assert (await api.post(f"{base(env)}/facts/{fact_id}/forget", token="bob", params={"endUserId": "u1"})).status == 404
    assert (await api.post(f"{base(env)}/facts/{fact_id}/forget", token="alice")).status == 404  # other scope
    # dave is not in the workspace: 403 there, and the agent does not exist in his own.
    assert (await api.get(f"{base(env)}/facts", token="dave")).status == 403
    r = await api.get(f"{base(env)}/facts", token="dave", workspace=env.people["dave"].get("workspace", 2))
    assert r.status in (403, 404)
    assert (await api.get("/api/v1/memory/999/facts", token="alice")).status == 404
