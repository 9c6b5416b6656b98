"""Routines: recurring requests mined from the caller's own messages, dismissed, reopened and promoted to skills."""
from __future__ import annotations

import datetime as dt
from typing import Any

from platform_server.db import utcnow
from platform_server.features.conversations.models import Message
from tests.helpers.chat import ChatEnv
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script

ROUTINES = "/api/v1/skills/routines"

RECURRING = [
    ("Summarize yesterday's sales report for the team", 2),
    ("Please summarize the sales report from yesterday for my team", 1),
    ("summarize yesterday sales report for the team https://example.com/r/77", 0),
    ("Can you summarize the team's sales report of yesterday?", 0),
]
OTHERS = ["What is the capital of France?", "hi", "thanks!", "/approve", "Translate this paragraph into German please"]


async def say(env: ChatEnv, text: str, token: str = "bob", conversation: str = "r1", days_ago: int = 0) -> None:
    r = await env.api.post("/api/v1/chat", {"agentId": env.agent_id, "message": text, "conversationId": conversation},
                           token=token)
    assert r.status == 200, r.body
    if days_ago:
        when = utcnow() - dt.timedelta(days=days_ago)
        Message.update(create_time=when).where((Message.content == text) & (Message.role == "user")).execute()


async def seed(env: ChatEnv) -> None:
    for i, (text, days_ago) in enumerate(RECURRING):
        await say(env, text, conversation=f"r{i % 2}", days_ago=days_ago)
    for text in OTHERS:
        await say(env, text, conversation="misc")
    await say(env, "Summarize yesterday's sales report for the team, alice here", token="alice", conversation="a1")


async def mine(env: ChatEnv, token: str = "bob") -> dict[str, Any]:
    r = await env.api.post(f"{ROUTINES}/mine", token=token)
    assert r.status == 200, r.body
    return r.data


async def test_recurring_requests_become_candidates_of_their_own_user(env: ChatEnv) -> None:
    api = env.api
    await seed(env)
    result = await mine(env)
    assert result["created"] == 1 and result["updated"] == 0 and result["scannedMessages"] == len(RECURRING) + len(OTHERS)
    [cand] = result["candidates"]
    assert cand["occurrences"] == 4 and cand["distinctDays"] == 3 and cand["ready"] is True and cand["status"] == "open"
    assert {"summarize", "sales", "report", "yesterday"} <= set(cand["pattern"].split())
    assert cand["examples"][0] in {t for t, _ in RECURRING} and len(cand["examples"]) == 4
    assert cand["firstSeen"] < cand["lastSeen"]

    r = await api.get(ROUTINES, token="bob")
    assert [c["id"] for c in r.data] == [cand["id"]]
    r = await api.get(ROUTINES, token="alice")
    assert r.data == []  # one user's requests are never shown to another
    assert (await mine(env, "alice"))["candidates"] == []  # a single request is no routine
    r = await api.post(f"{ROUTINES}/mine", token="carol")
    assert r.status == 403
    r = await api.get(ROUTINES, token="carol")
    assert r.status == 200 and r.data == []

    await say(env, "summarize the sales report for the team from yesterday", conversation="r3")
    again = await mine(env)
    assert again["created"] == 0 and again["updated"] == 1
    assert again["candidates"][0]["id"] == cand["id"] and again["candidates"][0]["occurrences"] == 5

    r = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "SKILL_ROUTINE"})
    assert any("routines mined" in e["detail"] for e in r.data["records"])


async def test_candidates_are_dismissed_reopened_and_promoted_into_a_disabled_skill(env: ChatEnv) -> None:
    api = env.api
    await seed(env)
    cid = (await mine(env))["candidates"][0]["id"]

    r = await api.post(f"{ROUTINES}/{cid}/dismiss", token="bob")
    assert r.status == 200 and r.data["status"] == "dismissed"
    r = await api.post(f"{ROUTINES}/{cid}/dismiss", token="bob")
    assert r.status == 200 and r.data["status"] == "dismissed"
    r = await api.get(ROUTINES, token="bob", params={"status": "open"})
    assert r.data == []
    assert (await mine(env))["candidates"] == []  # mining again keeps it dismissed
    r = await api.post(f"{ROUTINES}/{cid}/promote", token="bob")
    assert r.status == 409 and "reopen" not in r.body["msg"] and "dismissed" in r.body["msg"]
    r = await api.post(f"{ROUTINES}/{cid}/reopen", token="bob")
    assert r.status == 200 and r.data["status"] == "open"

    env.llm.enqueue(Script(error_status=500))
    r = await api.post(f"{ROUTINES}/{cid}/promote", token="bob")
    assert r.body["code"] == 2001
    r = await api.get(ROUTINES, token="bob")
    assert r.data[0]["status"] == "open"

    drafted = ("```markdown\n---\nname: sales-summary\ndescription: Summarize yesterday's sales report.\n---\n\n"
               "# Sales summary\n\n1. Fetch yesterday's report.\n2. Summarize it for the team.\n```")
    env.llm.enqueue(Script(text=drafted))
    r = await api.post(f"{ROUTINES}/{cid}/promote", token="bob")
    assert r.status == 200, r.body
    skill, cand = r.data["skill"], r.data["candidate"]
    assert skill["name"] == "sales-summary" and skill["skillType"] == "synthesized" and skill["enabled"] is False
    assert skill["source"] == f"routine:{cid}" and "# Sales summary" in skill["content"] and "```" not in skill["content"]
    assert cand["status"] == "promoted" and cand["skillId"] == skill["id"]
    sent = env.llm.requests[-1]["messages"]
    assert "4 times on 3 different days" in sent[-1]["content"] and RECURRING[0][0] in sent[-1]["content"]
    r = await api.get(f"/api/v1/skills/{skill['id']}", token="carol")
    assert r.status == 200

    for action in ("promote", "dismiss", "reopen"):
        r = await api.post(f"{ROUTINES}/{cid}/{action}", token="bob")
        assert r.status == 409 and "promoted" in r.body["msg"], action
    r = await api.get(ROUTINES, token="bob", params={"status": "promoted"})
    assert [c["id"] for c in r.data] == [cid]


async def test_promotion_skips_the_frequency_gates_and_ids_are_checked(env: ChatEnv) -> None:
    api = env.api
    await say(env, "Draft the weekly newsletter intro about product updates")
    await say(env, "draft the weekly newsletter intro about the product updates", conversation="r2")
    [cand] = (await mine(env))["candidates"]
    assert cand["occurrences"] == 2 and cand["distinctDays"] == 1 and cand["ready"] is False

    r = await api.post(f"{ROUTINES}/{cand['id']}/promote", token="alice")
    assert r.status == 404  # another user's candidate
    r = await api.post(f"{ROUTINES}/{cand['id']}/promote", token="carol")
    assert r.status == 403
    r = await api.post(f"{ROUTINES}/{cand['id']}/promote", {"name": "Bad Name"}, token="bob")
    assert r.status == 400
    env.llm.enqueue(Script(text="1. Open the changelog.\n2. Write three upbeat sentences."))
    r = await api.post(f"{ROUTINES}/{cand['id']}/promote", {"name": "newsletter-intro"}, token="bob")
    assert r.status == 200, r.body
    assert r.data["skill"]["name"] == "newsletter-intro" and "three upbeat sentences" in r.data["skill"]["content"]

    r = await api.post(f"{ROUTINES}/123/dismiss", token="bob")
    assert r.status == 404 and r.body["msg"] == "Routine candidate not found"
    r = await api.post(f"{ROUTINES}/abc/reopen", token="bob")
    assert r.status == 400 and r.body["msg"] == "Invalid value for parameter 'id': expected Long"
    r = await api.get(ROUTINES, token="bob", params={"status": "maybe"})
    assert r.status == 400 and r.body["msg"] == "status: must be one of open, dismissed, promoted"
    # the documented enum: an empty value is none of it (it listed every candidate)
    for status in ("", " open", "open "):  # read as sent: a padded value is none of it either (it was stripped into one)
        r = await api.get(ROUTINES, token="bob", params={"status": status})
        assert r.status == 400 and r.body["msg"].startswith("status: "), (status, r.body)


async def test_a_promotions_name_states_the_slug_rule_promote_checks(api: ApiClient, people: dict) -> None:
    """`name` was any text up to 64 characters, then refused by the slug check once a candidate was open: the
    document states the slug (or empty: the model's), and the body is refused as stated before any lookup."""
    from tests.helpers.openapi_inputs import conforms

    doc = (await api.get("/v3/api-docs")).body
    for name in ("Bad Name", "-x", "x" * 65):
        assert not conforms(doc, "PromoteBody", {"name": name}), name
        r = await api.post(f"{ROUTINES}/1/promote", {"name": name}, token="bob")
        assert r.status == 400 and r.body["msg"].startswith("name: "), (name, r.body)
    for name in ("", "good-name", None):
        assert conforms(doc, "PromoteBody", {"name": name}), name
        assert (await api.post(f"{ROUTINES}/1/promote", {"name": name}, token="bob")).status == 404
