"""Teams and team runs: plan, member work through delegation, merge; cancel by admins; listings and pages."""
from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.chat import make_agent, text_of
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.models import use_fake_openai
from tests.helpers.openapi_inputs import conforms

TERMINAL = ("completed", "partial", "failed", "cancelled")


@pytest.fixture
async def team(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> dict[str, Any]:
    await use_fake_openai(api, llm.url)
    lead = await make_agent(api, name="Lead", systemPrompt="You lead.")
    writer = await make_agent(api, name="Writer", systemPrompt="You write.", description="writes text")
    checker = await make_agent(api, name="Checker", systemPrompt="You check.")
    r = await api.post("/api/v1/teams", {"name": "Docs", "leadAgentId": lead, "memberAgentIds": [writer, checker]},
                       token="bob")
    assert r.status == 200, r.body
    return {"id": r.data["id"], "lead": lead, "writer": writer, "checker": checker}


def plan(*pairs: tuple[str, str]) -> Script:
    return Script(text=json.dumps({"tasks": [{"agent": a, "task": t} for a, t in pairs]}))


async def start(api: ApiClient, team_id: str, goal: str = "write the docs", token: str = "bob") -> str:
    r = await api.post(f"/api/v1/teams/{team_id}/runs", {"goal": goal}, token=token)
    assert r.status == 200, r.body
    assert r.data["status"] == "planning"
    return r.data["id"]


async def wait_for(api: ApiClient, run_id: str, states: tuple[str, ...] = TERMINAL) -> dict[str, Any]:
    async def reached() -> Any:
        r = await api.get(f"/api/v1/team-runs/{run_id}", token="carol")
        assert r.status == 200, r.body
        assert r.data["status"] in states, f"team run stayed {r.data['status']}"
        return r.data

    return await eventually(reached)


async def test_teams_are_made_of_agents_of_the_workspace(api: ApiClient, people: dict, team: dict) -> None:
    body = {"name": "T", "leadAgentId": team["lead"], "memberAgentIds": [team["writer"]]}
    assert (await api.post("/api/v1/teams", body, token="carol")).status == 403
    bad = await api.post("/api/v1/teams", {**body, "memberAgentIds": [team["lead"]]}, token="bob")
    assert bad.status == 422 and "lead" in bad.msg  # nobody besides the lead: valid JSON, a rule the document cannot state
    # the lead listed among the members too counts once, as the lead (a rule between two values JSON Schema cannot say)
    r = await api.post("/api/v1/teams", {**body, "memberAgentIds": [team["lead"], team["writer"]]}, token="bob")
    assert r.status == 200 and r.data["memberAgentIds"] == [team["writer"]], r.body
    assert (await api.delete(f"/api/v1/teams/{r.data['id']}", token="bob")).status == 200
    doc = (await api.get("/v3/api-docs")).body["components"]["schemas"]
    assert doc["TeamCreate"]["properties"]["memberAgentIds"]["uniqueItems"] is True
    assert doc["MemberAdd"]["properties"]["role"]["enum"] == ["lead", "member"]
    # an id past int64 is refused as the document's bounds say, not left to overflow the database
    assert doc["TeamCreate"]["properties"]["leadAgentId"]["format"] == "int64"
    r = await api.post("/api/v1/teams", {**body, "leadAgentId": 2**64}, token="bob")
    assert r.status == 400 and r.msg.startswith("leadAgentId"), r.body
    assert (await api.post("/api/v1/teams", {**body, "memberAgentIds": []}, token="bob")).status == 400
    other = people["dave"]["workspace"]
    foreign = (await api.post("/api/v1/agents", {"name": "F", "agentType": "react"}, token="dave",
                              workspace=other)).data["id"]
    r = await api.post("/api/v1/teams", {**body, "memberAgentIds": [foreign]}, token="bob")
    assert r.status == 404 and "not an agent of this workspace" in r.msg  # the body names another workspace's row
    got = (await api.get(f"/api/v1/teams/{team['id']}", token="carol")).data
    assert got["leadAgentId"] == team["lead"] and got["memberAgentIds"] == [team["writer"], team["checker"]]
    r = await api.put(f"/api/v1/teams/{team['id']}", {"memberAgentIds": [team["writer"]]}, token="bob")
    assert r.data["memberAgentIds"] == [team["writer"]] and r.data["name"] == "Docs"
    assert [t["id"] for t in (await api.get("/api/v1/teams", token="carol")).data] == [team["id"]]
    assert (await api.get(f"/api/v1/teams/{team['id']}", token="dave", workspace=other)).status == 404


async def test_a_team_run_plans_delegates_to_members_and_merges(api: ApiClient, people: dict, team: dict,
                                                                llm: ScriptedOpenAI) -> None:
    llm.enqueue(plan(("Writer", "draft the intro"), ("checker", "check the intro")),
                Script(text="Intro drafted."), Script(text="Looks right."), Script(text="Final: intro ready."))
    run = await wait_for(api, await start(api, team["id"]))
    assert run["status"] == "completed", run
    assert run["result"] == "Final: intro ready." and run["active"] is False and run["finishedAt"]
    assert [(t["agentName"], t["status"], t["result"]) for t in run["tasks"]] == [
        ("Writer", "completed", "Intro drafted."), ("Checker", "completed", "Looks right.")]
    planning, writer, checker, merge = llm.requests[-4:]
    assert planning["messages"][0]["content"].startswith("You lead.") and "- Writer: writes text" in \
        planning["messages"][0]["content"]
    assert planning["messages"][-1]["content"] == "Goal: write the docs"
    assert writer["messages"][0]["content"] == "You write." and writer["messages"][-1]["content"] == "draft the intro"
    assert checker["messages"][0]["content"] == "You check."
    assert "Intro drafted." in merge["messages"][-1]["content"] and "Looks right." in merge["messages"][-1]["content"]
    listed = (await api.get(f"/api/v1/teams/{team['id']}/runs", token="carol")).data
    assert [r["id"] for r in listed] == [run["id"]]
    active = await api.get(f"/api/v1/teams/{team['id']}/runs", params={"activeOnly": "true"}, token="carol")
    assert active.data == []


async def test_failed_member_tasks_make_the_run_partial_or_failed(api: ApiClient, people: dict, team: dict,
                                                                  llm: ScriptedOpenAI) -> None:
    llm.enqueue(plan(("Writer", "a"), ("Checker", "b")), Script(text="done a"),
                Script(error_status=400, error_message="bad request"), Script(text="merged"))
    run = await wait_for(api, await start(api, team["id"]))
    assert run["status"] == "partial" and run["result"] == "merged"
    assert [t["status"] for t in run["tasks"]] == ["completed", "failed"] and "failed" in run["tasks"][1]["error"]
    llm.enqueue(Script(text="I would rather not plan"))
    run = await wait_for(api, await start(api, team["id"]))
    assert run["status"] == "failed" and "plan" in run["error"]
    llm.enqueue(plan(("Nobody", "x")))
    run = await wait_for(api, await start(api, team["id"]))
    assert run["status"] == "failed" and "unknown member" in run["error"]


async def test_only_a_workspace_admin_cancels_an_active_run(api: ApiClient, people: dict, team: dict,
                                                            llm: ScriptedOpenAI) -> None:
    llm.enqueue(plan(("Writer", "slow work"), ("Checker", "never runs")), Script(hang=True))
    run_id = await start(api, team["id"])
    running = await wait_for(api, run_id, ("running",) + TERMINAL)
    assert running["status"] == "running"
    active = (await api.get(f"/api/v1/teams/{team['id']}/runs", params={"activeOnly": "1"}, token="carol")).data
    assert [r["id"] for r in active] == [run_id]

    async def delegations() -> Any:
        return (await api.get("/api/v1/subagents/active", params={"conversationId": f"team-{run_id}"},
                              token="bob")).data

    delegated = await eventually(delegations, what="the member's delegation")
    assert [d["agentName"] for d in delegated] == ["Writer"]  # members run as sub-agent delegations
    for who in ("bob", "carol"):
        r = await api.post(f"/api/v1/team-runs/{run_id}/cancel", {"reason": "x"}, token=who)
        assert r.status == 403, r.body
    r = await api.put(f"/api/v1/workspaces/1/members/{people['bob']['id']}", {"role": "admin"}, token="alice")
    assert r.status == 200, r.body
    r = await api.post(f"/api/v1/team-runs/{run_id}/cancel", {"reason": "enough"}, token="bob")
    assert r.status == 200, r.body
    assert r.data["status"] == "cancelled" and r.data["cancelReason"] == "enough"
    assert r.data["cancelledBy"] == people["bob"]["id"]

    async def tasks_cancelled() -> bool:
        run = (await api.get(f"/api/v1/team-runs/{run_id}", token="carol")).data
        assert run["status"] == "cancelled" and [t["status"] for t in run["tasks"]] == ["cancelled", "cancelled"], run
        return True

    await eventually(tasks_cancelled)
    again = await api.post(f"/api/v1/team-runs/{run_id}/cancel", token="alice")
    assert again.status == 409
    params = {"conversationId": f"team-{run_id}"}
    assert (await api.get("/api/v1/subagents/active", params=params, token="bob")).data == []


async def test_team_runs_page_with_a_cursor(api: ApiClient, people: dict, team: dict, llm: ScriptedOpenAI) -> None:
    ids = []
    for _ in range(3):
        llm.enqueue(Script(text="no plan"))
        ids.append(await start(api, team["id"]))
        await wait_for(api, ids[-1])
    base = f"/api/v1/teams/{team['id']}/runs/page"
    first = (await api.get(base, params={"limit": "2"}, token="carol")).data
    assert [r["id"] for r in first["items"]] == ids[::-1][:2] and first["nextCursor"] == ids[1]
    second = (await api.get(base, params={"limit": "2", "cursor": first["nextCursor"]}, token="carol")).data
    assert [r["id"] for r in second["items"]] == [ids[0]] and second["nextCursor"] is None
    assert (await api.get(base, params={"limit": "0"}, token="carol")).status == 400
    assert (await api.get(base, params={"cursor": "abc"}, token="carol")).status == 400
    assert (await api.get(base, params={"activeOnly": "true"}, token="carol")).data == {"items": [], "nextCursor": None}


async def test_the_lead_conversation_runs_its_team_with_the_team_run_tool(api: ApiClient, people: dict, team: dict,
                                                                          llm: ScriptedOpenAI) -> None:
    r = await api.put(f"/api/v1/agents/{team['lead']}/tools", {"toolNames": ["team_run"]}, token="alice")
    assert r.status == 200, r.body
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("team_run", {"goal": "ship the docs"})]),
                plan(("Writer", "write")), Script(text="written"), Script(text="merged docs"),
                Script(text="The team shipped the docs."))
    events = await api.sse("POST", "/api/v1/chat/stream",
                           {"agentId": team["lead"], "conversationId": "lead-1", "message": "go team"}, token="alice")
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed["success"] is True and completed["result"] == "merged docs"
    assert text_of(events) == "The team shipped the docs."
    runs = (await api.get("/api/v1/conversations/lead-1/team-runs", token="alice")).data
    assert len(runs) == 1 and runs[0]["conversationId"] == "lead-1" and runs[0]["status"] == "completed"
    assert runs[0]["goal"] == "ship the docs" and runs[0]["startedBy"] == people["alice"]["id"]
    page = (await api.get("/api/v1/conversations/lead-1/team-runs/page", token="alice")).data
    assert [r["id"] for r in page["items"]] == [runs[0]["id"]] and page["nextCursor"] is None
    assert (await api.get("/api/v1/conversations/lead-1/team-runs", token="bob")).status == 403
    fresh = await api.get("/api/v1/conversations/nope/team-runs/page", token="alice")  # a new chat, no message yet
    assert fresh.status == 200 and fresh.data == {"items": [], "nextCursor": None}
    other = people["dave"]["workspace"]
    assert (await api.get(f"/api/v1/team-runs/{runs[0]['id']}", token="dave", workspace=other)).status == 404
    assert (await api.get(f"/api/v1/team-runs/{runs[0]['id']}", token="dave")).status == 403


async def test_no_team_run_stays_active_across_a_restart(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    from tests.helpers.server import create_personas, start_server

    data_dir = str(tmp_path / "data")
    first = await start_server(data_dir)
    try:
        await create_personas(first.client)
        await use_fake_openai(first.client, llm.url)
        lead = await make_agent(first.client, name="Lead")
        member = await make_agent(first.client, name="Writer")
        r = await first.client.post("/api/v1/teams", {"name": "T", "leadAgentId": lead, "memberAgentIds": [member]},
                                    token="alice")
        llm.enqueue(plan(("Writer", "slow")), Script(hang=True))
        run_id = await start(first.client, r.data["id"], token="alice")
        await wait_for(first.client, run_id, ("running",))
    finally:
        await first.stop()
    second = await start_server(data_dir)
    try:
        second.client.tokens.update(first.client.tokens)
        run = (await second.client.get(f"/api/v1/team-runs/{run_id}", token="alice")).data
        assert run["status"] == "failed" and "Interrupted" in run["error"] and run["tasks"][0]["status"] == "cancelled"
    finally:
        await second.stop()


async def test_a_team_that_asks_for_review_awaits_it_and_redoes_the_tasks_sent_back(
        api: ApiClient, people: dict, team: dict, llm: ScriptedOpenAI) -> None:
    def reviewed_plan() -> Script:
        return Script(text=json.dumps({"tasks": [{"agent": "Writer", "task": "draft the intro"},
                                                 {"agent": "Checker", "task": "check the intro"}], "review": True}))

    # The review itself takes as long as the lead needs: the run waits in awaiting_review.
    llm.enqueue(reviewed_plan(), Script(text="Intro drafted."), Script(text="Looks right."), Script(hang=True))
    run_id = await start(api, team["id"])
    waiting = await wait_for(api, run_id, ("awaiting_review",))
    assert waiting["active"] is True and all(t["status"] == "completed" for t in waiting["tasks"])
    # (the run says awaiting_review before the lead's review call reaches the model: wait for that call)
    assert await eventually(lambda: "Task 1 (Writer)" in llm.requests[-1]["messages"][-1]["content"], what="the review request")
    r = await api.post(f"/api/v1/team-runs/{run_id}/cancel", {"reason": "enough"}, token="alice")
    assert r.status == 200, r.body

    review = json.dumps({"approved": False, "feedback": "Mention the licence.", "redo": [1]})
    llm.enqueue(reviewed_plan(), Script(text="Intro drafted."), Script(text="Looks right."), Script(text=review),
                Script(text="Intro drafted, MIT licence."), Script(text="Final: intro with licence."))
    run = await wait_for(api, await start(api, team["id"]))
    assert run["status"] == "completed" and run["result"] == "Final: intro with licence."
    writer, checker = run["tasks"]
    assert writer["review"] == "redo" and writer["reviewFeedback"] == "Mention the licence."
    assert writer["result"] == "Intro drafted, MIT licence." and checker["review"] == "approved"
    assert "Mention the licence." in llm.requests[-2]["messages"][-1]["content"]


async def test_a_cursor_page_takes_the_documented_cursor_and_limit_as_written(api: ApiClient, people: dict) -> None:
    """cursor is a run id (empty: the first page), limit an integer from 1: a non-numeric cursor is a 400 the
    document now states, and an empty or padded limit is no integer (it was read as the default)."""
    import re

    params = {p["name"]: p["schema"] for p in (await api.get("/v3/api-docs")).body["paths"][
        "/api/v1/conversations/{conversationId}/team-runs/page"]["get"]["parameters"]}
    assert re.search(params["cursor"]["pattern"], "") and not re.search(params["cursor"]["pattern"], "\"x")
    base = "/api/v1/conversations/nope/team-runs/page"
    for query in ({"cursor": ""}, {"cursor": "123"}, {"limit": "5"}):
        assert (await api.get(base, params=query, token="alice")).status == 200, query
    for query in ({"cursor": "\"x"}, {"cursor": " 12"}, {"limit": ""}, {"limit": " 5"}, {"limit": "0"}):
        r = await api.get(base, params=query, token="alice")
        assert r.status == 400, (query, r.body)


async def test_what_a_team_refuses_by_its_stored_state_is_a_409_and_a_blank_goal_is_refused_by_the_document_too(
    api: ApiClient, people: dict, team: dict
) -> None:
    """A blank run goal was a 400 the document allowed; the team's stored lead and members decide a member's add or
    removal and a sparse update that leaves nobody besides the lead (409); both lead and members given is a 422."""
    doc = (await api.get("/v3/api-docs")).body
    r = await api.post(f"/api/v1/teams/{team['id']}/runs", {"goal": "\u3000 "}, token="bob")
    assert r.status == 400 and not conforms(doc, "TeamRunStart", {"goal": "\u3000 "}), r.body
    assert conforms(doc, "TeamRunStart", {"goal": " write "})
    url = f"/api/v1/teams/{team['id']}"
    r = await api.post(f"{url}/members", {"agentId": int(team["lead"]), "role": "member"}, token="bob")
    assert r.status == 409 and conforms(doc, "MemberAdd", {"agentId": 1, "role": "member"}), r.body
    assert (await api.delete(f"{url}/members/{team['lead']}", token="bob")).status == 409
    r = await api.put(url, {"memberAgentIds": [int(team["lead"])]}, token="bob")  # the stored lead takes part
    assert r.status == 409 and conforms(doc, "TeamUpdate", {"memberAgentIds": [1]}), r.body
    r = await api.put(url, {"leadAgentId": int(team["lead"]), "memberAgentIds": [int(team["lead"])]}, token="bob")
    assert r.status == 422, r.body
    for method, path in (("post", "/api/v1/teams"), ("put", "/api/v1/teams/{teamId}")):
        assert "422" in doc["paths"][path][method]["responses"], path
    for method, path in (("put", "/api/v1/teams/{teamId}"), ("post", "/api/v1/teams/{teamId}/members"),
                         ("delete", "/api/v1/teams/{teamId}/members/{agentId}")):
        assert "409" in doc["paths"][path][method]["responses"], path
    members = [await make_agent(api, name=f"M{i}") for i in range(8)]  # 2 members + 8 = the most a team may have
    for agent in members:
        assert (await api.post(f"{url}/members", {"agentId": int(agent)}, token="bob")).status == 200
    extra = await make_agent(api, name="One too many")
    r = await api.post(f"{url}/members", {"agentId": int(extra)}, token="bob")
    assert r.status == 409 and r.msg.startswith("memberAgentIds: the team has 10 members"), r.body


async def test_the_task_boards_offset_is_a_stated_long(api: ApiClient, people: dict, team: dict) -> None:
    """`offset` was an integer without a maximum, read as a Long: 2**63 was valid input refused. It states the Long."""
    doc = (await api.get("/v3/api-docs")).body
    offset = next(p for p in doc["paths"]["/api/v1/teams/{teamId}/tasks"]["get"]["parameters"] if p["name"] == "offset")
    assert offset["schema"]["maximum"] == 2**63 - 1
    url = f"/api/v1/teams/{team['id']}/tasks"
    assert (await api.get(url, params={"offset": str(2**63 - 1)}, token="carol")).data == []
    assert (await api.get(url, params={"offset": str(2**63)}, token="carol")).status == 400
