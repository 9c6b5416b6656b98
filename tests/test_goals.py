"""Goals: creation on an owned conversation, the state machine with every refused transition, events, ownership."""
from __future__ import annotations

from typing import Any

import pytest

from platform_server.features.goals import service as goals
from tests.helpers.chat import ChatEnv, chat_env
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.openapi_inputs import conforms


@pytest.fixture
async def env(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> ChatEnv:
    """The shared chat setup plus alice's conversation `g1`."""
    env = await chat_env(api, people, llm)
    await env.stream("let us plan the launch", conversation_id="g1")
    return env


async def make_goal(env: ChatEnv, conversation_id: str = "g1", token: str = "alice", **fields: Any) -> dict[str, Any]:
    body = {"conversationId": conversation_id, "agentId": env.agent_id, "title": "Ship the launch",
            "criteria": ["Landing page live", "Press kit sent"], **fields}
    r = await env.api.post("/api/v1/goals", body, token=token)
    assert r.status == 200, r.body
    return r.data


async def act(env: ChatEnv, goal_id: str, action: str, body: Any = None, token: str = "alice") -> Any:
    return await env.api.post(f"/api/v1/goals/{goal_id}/{action}", body, token=token)


async def test_a_goal_is_created_for_an_owned_conversation_and_is_its_open_goal(env: ChatEnv) -> None:
    g = await make_goal(env)
    assert g["status"] == "active" and g["title"] == "Ship the launch" and g["conversationId"] == "g1"
    assert g["criteria"] == ["Landing page live", "Press kit sent"] and g["agentId"] == env.agent_id
    assert g["userId"] == env.people["alice"]["id"] and g["closedAt"] is None
    assert (await env.api.get(f"/api/v1/goals/{g['id']}", token="alice")).data == g
    assert (await env.api.get("/api/v1/goals/by-conversation/g1", token="alice")).data == g
    dup = await env.api.post("/api/v1/goals", {"conversationId": "g1", "agentId": env.agent_id, "title": "Another"},
                             token="alice")
    assert dup.status == 409 and "already has an open goal" in dup.msg  # the open goal, not the body, refuses it
    events = (await env.api.get(f"/api/v1/goals/{g['id']}/events", token="alice")).data
    assert [e["type"] for e in events] == ["created"]
    assert events[0]["toStatus"] == "active" and events[0]["detail"]["criteria"] == g["criteria"]
    audit = (await env.api.get("/api/v1/audit/events", token="alice", params={"resourceType": "GOAL"})).data
    assert audit["total"] == 1 and audit["records"][0]["action"] == "CREATE"


async def test_pause_resume_criteria_patch_and_abandon_follow_the_state_table(env: ChatEnv) -> None:
    g = await make_goal(env)
    gid = g["id"]
    assert (await act(env, gid, "resume")).msg == "Only a paused goal can be resumed: the goal is active"
    paused = await act(env, gid, "pause")
    assert paused.status == 200 and paused.data["status"] == "paused"
    again = await act(env, gid, "pause")
    assert again.status == 409 and again.msg == "Only an active goal can be paused: the goal is paused"
    refused = await act(env, gid, "criteria", {"criterion": "Blog post"})
    assert refused.status == 409 and refused.msg == "Criteria can only be added to an active goal: the goal is paused"
    assert (await env.api.get("/api/v1/goals/by-conversation/g1", token="alice")).data["status"] == "paused"
    patched = await env.api.patch(f"/api/v1/goals/{gid}", {"title": "Ship v2"}, token="alice")
    assert patched.status == 200 and patched.data["title"] == "Ship v2" and patched.data["status"] == "paused"
    resumed = await act(env, gid, "resume")
    assert resumed.data["status"] == "active"
    added = await act(env, gid, "criteria", {"criterion": "  Blog post  "})
    assert added.data["criteria"] == ["Landing page live", "Press kit sent", "Blog post"]
    replaced = await env.api.patch(f"/api/v1/goals/{gid}", {"criteria": ["Only this"]}, token="alice")
    assert replaced.data["criteria"] == ["Only this"] and replaced.data["title"] == "Ship v2"
    abandoned = await act(env, gid, "abandon", {"reason": "priorities changed"})
    assert abandoned.data["status"] == "abandoned" and abandoned.data["closedAt"] is not None
    for action, body in (("abandon", None), ("pause", None), ("resume", None), ("criteria", {"criterion": "x"})):
        r = await act(env, gid, action, body)
        assert r.status == 409 and r.msg.endswith("the goal is abandoned"), (action, r.body)
    late = await env.api.patch(f"/api/v1/goals/{gid}", {"title": "Too late"}, token="alice")
    assert late.status == 409 and late.msg == "Only an active or paused goal can be updated: the goal is abandoned"
    assert (await env.api.get(f"/api/v1/goals/{gid}", token="alice")).data["title"] == "Ship v2"
    assert (await env.api.get("/api/v1/goals/by-conversation/g1", token="alice")).data is None
    events = (await env.api.get(f"/api/v1/goals/{gid}/events", token="alice")).data
    assert [(e["type"], e["fromStatus"], e["toStatus"]) for e in events] == [
        ("created", None, "active"), ("paused", "active", "paused"), ("updated", "paused", "paused"),
        ("resumed", "paused", "active"), ("criterion_added", "active", "active"),
        ("criteria_updated", "active", "active"), ("updated", "active", "active"),
        ("abandoned", "active", "abandoned"),
    ]
    assert events[2]["detail"] == {"title": {"from": "Ship the launch", "to": "Ship v2"}}
    assert events[5]["detail"]["to"] == ["Only this"] and events[7]["detail"] == {"reason": "priorities changed"}
    nxt = await make_goal(env, title="Next goal")
    assert nxt["status"] == "active"


async def test_patch_can_close_a_goal_as_completed_or_exhausted_and_refuses_other_statuses(env: ChatEnv) -> None:
    g = await make_goal(env)
    for body, msg in (({"status": "paused"}, "status: "), ({"status": "abandoned"}, "status: "), ({}, "body: nothing"),
                      ({"title": "  "}, "title: must not be blank"), ({"criteria": [""]}, "criteria.0: "),
                      ({"criteria": ["x"] * 51}, "criteria: ")):
        r = await env.api.patch(f"/api/v1/goals/{g['id']}", body, token="alice")
        assert r.status == 400 and r.msg.startswith(msg), (body, r.body)
    done = await env.api.patch(f"/api/v1/goals/{g['id']}", {"status": "completed"}, token="alice")
    assert done.data["status"] == "completed" and done.data["closedAt"]
    assert (await env.api.patch(f"/api/v1/goals/{g['id']}", {"status": "exhausted"}, token="alice")).status == 409
    h = await make_goal(env)
    out = await env.api.patch(f"/api/v1/goals/{h['id']}", {"status": "exhausted"}, token="alice")
    assert out.data["status"] == "exhausted"
    listed = (await env.api.get("/api/v1/goals", token="alice")).data
    assert [x["id"] for x in listed] == [h["id"], g["id"]]
    only = (await env.api.get("/api/v1/goals", token="alice", params={"status": "completed"})).data
    assert [x["id"] for x in only] == [g["id"]]
    assert (await env.api.get("/api/v1/goals", token="alice", params={"status": "done"})).status == 400


async def test_goals_belong_to_the_conversation_owner(env: ChatEnv) -> None:
    g = await make_goal(env)
    gid = g["id"]
    for method, path, body in (("GET", f"/api/v1/goals/{gid}", None), ("PATCH", f"/api/v1/goals/{gid}", {"title": "x"}),
                               ("POST", f"/api/v1/goals/{gid}/pause", None), ("POST", f"/api/v1/goals/{gid}/abandon", None),
                               ("POST", f"/api/v1/goals/{gid}/criteria", {"criterion": "x"}),
                               ("GET", f"/api/v1/goals/{gid}/events", None),
                               ("GET", "/api/v1/goals/by-conversation/g1", None)):
        r = await env.api.request(method, path, body, token="bob")
        assert r.status == 403, (method, path, r.body)
    taken = await env.api.post("/api/v1/goals", {"conversationId": "g1", "agentId": env.agent_id, "title": "Mine"},
                               token="bob")
    assert taken.status == 403
    assert (await env.api.get("/api/v1/goals", token="bob")).data == []
    unknown = await env.api.post("/api/v1/goals", {"conversationId": "never-used", "agentId": env.agent_id, "title": "x"},
                                 token="alice")
    assert unknown.status == 404
    assert (await env.api.get("/api/v1/goals/by-conversation/never-used", token="alice")).data is None
    dave_ws = env.people["dave"]["workspace"]
    assert (await env.api.get(f"/api/v1/goals/{gid}", token="dave", workspace=dave_ws)).status == 404
    assert (await env.api.get("/api/v1/goals/999", token="alice")).status == 404
    bad_agent = await env.api.post("/api/v1/goals", {"conversationId": "g1", "agentId": "5", "title": "x"}, token="alice")
    assert bad_agent.status == 404 and bad_agent.msg.startswith("agentId: no such agent")
    # carol (viewer) can chat, so she keeps goals on her own conversations
    await env.stream("hi", conversation_id="carol-1", token="carol")
    mine = await make_goal(env, conversation_id="carol-1", token="carol")
    assert mine["userId"] == env.people["carol"]["id"]
    assert (await env.api.get(f"/api/v1/goals/{mine['id']}", token="alice")).status == 403


async def test_the_context_hook_gives_the_active_goal_and_nothing_while_paused(env: ChatEnv) -> None:
    g = await make_goal(env)
    alice = int(env.people["alice"]["id"])
    text = goals.context_for(alice, "g1")
    assert text is not None and "Ship the launch" in text and "- Press kit sent" in text
    await act(env, g["id"], "pause")
    assert goals.context_for(alice, "g1") is None
    assert goals.context_for(int(env.people["bob"]["id"]), "g1") is None


async def test_the_agent_sees_the_active_goal_of_its_conversation(env: ChatEnv) -> None:
    await env.stream("let's plan", conversation_id="g9")
    r = await env.api.post("/api/v1/goals", {"conversationId": "g9", "agentId": env.agent_id, "title": "Ship the release",
                                             "criteria": ["tests pass"]}, token="alice")
    assert r.status == 200, r.body
    await env.stream("next step?", conversation_id="g9")
    system = env.llm.requests[-1]["messages"][0]["content"]
    assert "## Current goal" in system and "Ship the release" in system and "- tests pass" in system
    await env.api.post(f"/api/v1/goals/{r.data['id']}/pause", token="alice")
    await env.stream("and now?", conversation_id="g9")
    assert "Ship the release" not in env.llm.requests[-1]["messages"][0]["content"]


async def test_the_goal_list_refuses_a_status_outside_its_enum_an_empty_one_included(env: ChatEnv) -> None:
    await make_goal(env)
    assert len((await env.api.get("/api/v1/goals", token="alice", params={"status": "active"})).data) == 1
    for status in ("", "\x1d", " active", "nope"):  # an empty (or stripped-to-empty) value is not "no filter"
        r = await env.api.get("/api/v1/goals", token="alice", params={"status": status})
        assert r.status == 400 and r.msg.startswith("status: must be one of"), (status, r.body)
    r = await env.api.get("/api/v1/goals/by-conversation/g1%20", token="alice")  # the document's conversationId pattern
    assert r.status == 400 and r.msg.startswith("conversationId: "), r.body


async def test_what_the_goal_bodies_state_is_what_the_server_takes_and_the_goals_state_is_a_409(env: ChatEnv) -> None:
    """A blank title or criterion, an agentId that is no Long, a conversationId outside its pattern, an update that
    changes nothing: each a 400 the document states too; a closed goal or a full criteria list is a 409 (state)."""
    doc = (await env.api.get("/v3/api-docs")).body
    base = {"conversationId": "g1", "agentId": env.agent_id, "title": "Ship"}
    refused = [{**base, "title": "\u3000"}, {**base, "criteria": ["ok", " "]}, {**base, "criteria": ["x" * 501]},
               {**base, "agentId": "12a"}, {**base, "agentId": " 12"}, {**base, "agentId": True}, {**base, "conversationId": "g1 "},
               {**base, "conversationId": "a@b"}, {**base, "agentId": "0123456789012345678"}]
    for body in refused:
        r = await env.api.post("/api/v1/goals", body, token="alice")
        assert r.status == 400 and not conforms(doc, "GoalCreate", body), (body, r.body)
    for body in ({**base, "agentId": int(env.agent_id)}, {**base, "agentId": 12}):
        r = await env.api.post("/api/v1/goals", body, token="alice")
        assert r.status in (200, 404) and conforms(doc, "GoalCreate", body), (body, r.body)
    gid = (await env.api.get("/api/v1/goals/by-conversation/g1", token="alice")).data["id"]
    for body in ({}, {"title": None}, {"status": None, "criteria": None}, {"title": " "}, {"criteria": ["\t"]}):
        r = await env.api.patch(f"/api/v1/goals/{gid}", body, token="alice")
        assert r.status == 400 and not conforms(doc, "GoalUpdate", body), (body, r.body)
    for body in ({"maxAttempts": 3}, {"criteria": []}, {"title": None, "status": "completed"}):
        r = await env.api.patch(f"/api/v1/goals/{gid}", body, token="alice")
        assert r.status == 200 and conforms(doc, "GoalUpdate", body), (body, r.body)
    r = await env.api.patch(f"/api/v1/goals/{gid}", {"title": "Reopen?"}, token="alice")
    assert r.status == 409 and "409" in doc["paths"]["/api/v1/goals/{id}"]["patch"]["responses"], r.body
    full = await make_goal(env, criteria=[f"c{i}" for i in range(goals.MAX_CRITERIA)])
    r = await act(env, full["id"], "criteria", {"criterion": "one more"})
    assert r.status == 409 and conforms(doc, "CriterionRequest", {"criterion": "one more"}), r.body
    assert not conforms(doc, "CriterionRequest", {"criterion": "\n"})
