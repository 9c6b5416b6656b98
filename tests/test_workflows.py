"""Workflows: drafts, compile diagnostics, revisions, runs through agent/condition/approval nodes, restart."""
from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer, create_personas, start_server

W = "/api/v1/workflows"


@pytest.fixture
async def agent_id(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> str:
    await use_fake_openai(api, llm.url)
    return await make_agent(api, name="Checker", systemPrompt="You check things.")


def node(node_id: str, node_type: str, **config: Any) -> dict[str, Any]:
    return {"id": node_id, "type": node_type, "config": config}


def edge(src: str, dst: str, condition: str | None = None) -> dict[str, Any]:
    return {"from": src, "to": dst, **({"condition": condition} if condition else {})}


def agent_branch_graph(agent_id: str) -> dict[str, Any]:
    return {
        "nodes": [
            node("start", "start"),
            node("a", "agent", agentId=agent_id, message="Please {{input.task}}"),
            node("ok", "condition", left="{{nodes.a.output}}", op="contains", right="yes"),
            node("end_yes", "end", output="accepted: {{nodes.a.output}}"),
            node("end_no", "end"),
        ],
        "edges": [edge("start", "a"), edge("a", "ok"), edge("ok", "end_yes", "true"), edge("ok", "end_no", "false")],
    }


APPROVAL_GRAPH = {
    "nodes": [
        node("start", "start"),
        node("review", "approval", message="Ship {{input.what}}?"),
        node("shipped", "end", output="shipped {{input.what}} ({{nodes.review.output.payload.note}})"),
        node("dropped", "end", output="dropped"),
    ],
    "edges": [edge("start", "review"), edge("review", "shipped", "approved"), edge("review", "dropped", "rejected")],
}


async def published(api: ApiClient, graph: dict[str, Any], token: str = "alice", **headers: Any) -> str:
    r = await api.post(W, {"name": "Flow"}, token=token, **headers)
    assert r.status == 200, r.body
    wid = r.data["id"]
    r = await api.put(f"{W}/{wid}/draft", {"graph": graph}, token=token, **headers)
    assert r.status == 200, r.body
    r = await api.post(f"{W}/{wid}/publish", token=token, **headers)
    assert r.status == 200, r.body
    return wid


async def finished(api: ApiClient, run_id: str, token: str = "alice", want: tuple[str, ...] = (
        "succeeded", "failed", "cancelled", "paused")) -> dict[str, Any]:
    async def ended() -> Any:
        r = await api.get(f"{W}/runs/{run_id}", token=token)
        assert r.status == 200, r.body
        assert r.data["status"] in want, f"run {run_id} stayed {r.data['status']}"
        return r.data

    return await eventually(ended)


async def start_run(api: ApiClient, wid: str, run_input: Any, token: str = "alice") -> str:
    r = await api.post(f"{W}/{wid}/runs", {"input": run_input}, token=token)
    assert r.status == 200, r.body
    assert r.data["status"] == "running"
    return r.data["id"]


async def test_a_new_workflow_has_an_empty_draft_and_only_members_write(api: ApiClient, people: dict) -> None:
    assert (await api.post(W, {"name": "Nope"}, token="carol")).status == 403
    r = await api.post(W, {"name": "Flow", "description": "d"}, token="bob")
    assert r.status == 200, r.body
    wid = r.data["id"]
    assert r.data["draft"] == {"nodes": [], "edges": []} and r.data["latestRevisionId"] is None
    assert r.data["latestRevision"] is None and r.data["enabled"] is True
    r = await api.get(f"{W}/{wid}", token="carol")
    assert r.status == 200 and r.data["name"] == "Flow"
    assert (await api.put(f"{W}/{wid}", {"name": "Renamed"}, token="carol")).status == 403
    r = await api.put(f"{W}/{wid}", {"name": "Renamed", "enabled": False}, token="bob")
    assert r.data["name"] == "Renamed" and r.data["enabled"] is False and r.data["description"] == "d"
    assert [w["name"] for w in (await api.get(W, token="carol")).data] == ["Renamed"]
    assert (await api.put(f"{W}/{wid}/draft", {"graph": {"nodes": []}, "graphJson": "{}"}, token="bob")).status == 400
    r = await api.put(f"{W}/{wid}/draft", {"graphJson": json.dumps({"nodes": [node("x", "bogus")]})}, token="bob")
    assert r.status == 200 and r.data["draft"]["nodes"][0]["type"] == "bogus"  # saved without compiling
    # the document: a required body with exactly one of graph or graphJson, an object (its JSON text is read too)
    op = (await api.get("/v3/api-docs")).body["paths"]["/api/v1/workflows/{id}/draft"]["put"]
    assert op["requestBody"]["required"] is True
    body = (await api.get("/v3/api-docs")).body["components"]["schemas"]["DraftBody"]
    assert [b["required"] for b in body["oneOf"]] == [["graph"], ["graphJson"]] and body["properties"]["graphJson"]["type"] == "object"
    r = await api.put(f"{W}/{wid}/draft", {"graph": None, "graphJson": {"nodes": []}}, token="bob")
    assert r.status == 400 and r.msg.startswith("graph: ")  # a key given is an object: a null one counts as given
    assert (await api.put(f"{W}/{wid}/draft", token="bob")).status == 400
    assert (await api.delete(f"{W}/{wid}", token="bob")).status == 200
    assert (await api.get(f"{W}/{wid}", token="alice")).status == 404
    assert (await api.get(W, token="alice")).data == []
    events = (await api.get("/api/v1/audit/events", params={"resourceType": "WORKFLOW"}, token="alice")).data
    assert {"CREATE", "UPDATE", "DELETE"} <= {e["action"] for e in events["records"]}


async def test_compile_reports_schema_and_acl_diagnostics_without_storing_anything(
        api: ApiClient, people: dict, agent_id: str) -> None:
    other = people["dave"]["workspace"]
    r = await api.post("/api/v1/agents", {"name": "Foreign", "agentType": "react"}, token="dave", workspace=other)
    foreign = r.data["id"]
    broken = {
        "nodes": [
            node("start", "start"),
            node("a", "agent", agentId=foreign, message="hi"),
            node("b", "mystery"),
            node("c", "llm", prompt="{{nodes.ghost.output}}"),
            node("d", "llm", prompt="x"),
            node("island", "llm", prompt="alone"),
        ],
        "edges": [edge("start", "a"), edge("a", "c"), edge("c", "d"), edge("d", "c"), edge("a", "nowhere"),
                  edge("b", "island")],
    }
    r = await api.post(f"{W}/draft/preview-compile", {"graph": broken}, token="bob")
    assert r.status == 200, r.body
    codes = {d["code"] for d in r.data["diagnostics"]}
    assert {"UNKNOWN_NODE_TYPE", "MISSING_END", "DANGLING_EDGE", "CYCLE", "UNREACHABLE_NODE", "AGENT_ACL",
            "UNKNOWN_REFERENCE"} <= codes
    assert r.data["ok"] is False and r.data["errors"] >= 7
    acl = next(d for d in r.data["diagnostics"] if d["code"] == "AGENT_ACL")
    assert acl["nodeId"] == "a"
    r = await api.post(W, {"name": "F"}, token="bob")
    wid = r.data["id"]
    await api.put(f"{W}/{wid}/draft", {"graph": broken}, token="bob")
    r = await api.post(f"{W}/{wid}/compile", token="bob")
    assert r.data["ok"] is False and "CYCLE" in {d["code"] for d in r.data["diagnostics"]}
    assert (await api.get(f"{W}/{wid}", token="bob")).data["latestRevisionId"] is None
    r = await api.post(f"{W}/{wid}/publish", token="bob")
    assert r.status == 409 and "does not compile" in r.msg  # the draft's state: the same call succeeds once it compiles
    assert (await api.get(f"{W}/{wid}", token="bob")).data["latestRevisionId"] is None
    good = agent_branch_graph(agent_id)
    r = await api.post(f"{W}/draft/preview-compile", {"graph": good}, token="bob")
    assert r.data["ok"] is True and r.data["diagnostics"] == []
    r = await api.post(f"{W}/draft/preview-compile", {"graph": good}, token="dave", workspace=other)
    assert r.data["ok"] is False and [d["code"] for d in r.data["diagnostics"]] == ["AGENT_ACL"]
    assert (await api.post(f"{W}/draft/preview-compile", {"graph": good}, token="carol")).status == 403
    r = await api.post(f"{W}/draft/preview-compile", {"graph": {"nodes": "x"}}, token="bob")
    assert r.data["diagnostics"][0]["code"] == "INVALID_GRAPH"


async def test_publish_stores_immutable_revisions(api: ApiClient, people: dict, agent_id: str) -> None:
    wid = await published(api, agent_branch_graph(agent_id))
    first = (await api.get(f"{W}/{wid}", token="carol")).data
    assert first["latestRevision"]["version"] == 1
    assert first["latestRevision"]["graph"]["nodes"][1]["config"]["agentId"] == agent_id
    changed = agent_branch_graph(agent_id)
    changed["nodes"][1]["config"]["message"] = "Changed {{input.task}}"
    await api.put(f"{W}/{wid}/draft", {"graph": changed}, token="alice")
    now = (await api.get(f"{W}/{wid}", token="alice")).data
    assert now["latestRevisionId"] == first["latestRevisionId"]
    assert now["latestRevision"]["graph"]["nodes"][1]["config"]["message"] == "Please {{input.task}}"
    r = await api.post(f"{W}/{wid}/publish", token="alice")
    assert r.data["latestRevision"]["version"] == 2 and r.data["latestRevisionId"] != first["latestRevisionId"]


async def test_a_run_walks_agent_and_condition_nodes_and_records_each_step(
        api: ApiClient, people: dict, agent_id: str, llm: ScriptedOpenAI) -> None:
    wid = await published(api, agent_branch_graph(agent_id))
    llm.enqueue(Script(text="Checked: yes, all good"))
    run = await finished(api, await start_run(api, wid, {"task": "check the report"}))
    assert run["status"] == "succeeded", run
    assert run["output"] == "accepted: Checked: yes, all good"
    assert [(s["nodeId"], s["status"]) for s in run["steps"]] == [
        ("start", "succeeded"), ("a", "succeeded"), ("ok", "succeeded"), ("end_yes", "succeeded")]
    agent_step = run["steps"][1]
    assert agent_step["input"]["message"] == "Please check the report"
    assert agent_step["conversationId"].startswith("wf-") and agent_step["durationMs"] >= 0
    assert run["steps"][2]["outcome"] == "true" and run["steps"][2]["output"] is True
    assert llm.requests[-1]["messages"][0]["content"] == "You check things."
    assert llm.requests[-1]["messages"][-1]["content"] == "Please check the report"
    llm.enqueue(Script(text="Nope"))
    run2 = await finished(api, await start_run(api, wid, {"task": "x"}, token="bob"))
    assert run2["status"] == "succeeded" and run2["output"] == "Nope" and run2["steps"][-1]["nodeId"] == "end_no"
    runs = (await api.get(f"{W}/{wid}/runs", token="carol")).data
    assert [r["id"] for r in runs] == [run2["id"], run["id"]]
    assert (await api.post(f"{W}/{wid}/runs", {"input": {}}, token="carol")).status == 403


async def test_a_failing_step_fails_the_run_with_its_error(api: ApiClient, people: dict, agent_id: str,
                                                           llm: ScriptedOpenAI) -> None:
    graph = {"nodes": [node("start", "start"), node("n", "condition", left="{{input.n}}", op="gt", right="3"),
                       node("big", "end", output="big"), node("small", "end", output="small")],
             "edges": [edge("start", "n"), edge("n", "big", "true"), edge("n", "small", "false")]}
    wid = await published(api, graph)
    assert (await finished(api, await start_run(api, wid, {"n": 5})))["output"] == "big"
    run = await finished(api, await start_run(api, wid, {"n": "many"}))
    assert run["status"] == "failed" and "not a number" in run["error"] and run["steps"][-1]["status"] == "failed"
    unpublished = (await api.post(W, {"name": "Empty"}, token="alice")).data["id"]
    assert (await api.post(f"{W}/{unpublished}/runs", {}, token="alice")).status == 409


async def test_an_approval_pauses_the_run_until_resumed_with_each_outcome(api: ApiClient, people: dict) -> None:
    wid = await published(api, APPROVAL_GRAPH)
    results = {}
    for outcome in ("approved", "rejected", "timeout", "cancelled"):
        run = await finished(api, await start_run(api, wid, {"what": "v2"}, token="bob"))
        assert run["status"] == "paused" and run["pausedNodeId"] == "review" and run["pauseReason"] == "Ship v2?"
        token = run["pauseToken"]
        paused = (await api.get(f"{W}/runs/paused", token="carol")).data
        assert run["id"] in [p["id"] for p in paused]
        assert (await api.post(f"{W}/runs/{run['id']}/resume", {"outcome": outcome}, token="carol")).status == 403
        stale = await api.post(f"{W}/runs/{run['id']}/resume", {"outcome": outcome, "pauseToken": "old"}, token="bob")
        assert stale.status == 409
        assert (await api.post(f"{W}/runs/{run['id']}/resume", {"outcome": "maybe"}, token="bob")).status == 400
        r = await api.post(f"{W}/runs/{run['id']}/resume",
                            {"outcome": outcome, "pauseToken": token, "payload": {"note": "lgtm"}}, token="bob")
        assert r.status == 200, r.body
        results[outcome] = await finished(api, run["id"], want=("succeeded", "failed", "cancelled"))
        again = await api.post(f"{W}/runs/{run['id']}/resume", {"outcome": outcome}, token="bob")
        assert again.status == 409
    assert results["approved"]["status"] == "succeeded" and results["approved"]["output"] == "shipped v2 (lgtm)"
    review = results["approved"]["steps"][1]
    assert review["outcome"] == "approved" and review["output"]["resumedBy"] == people["bob"]["id"]
    assert results["rejected"]["status"] == "succeeded" and results["rejected"]["output"] == "dropped"
    assert results["timeout"]["status"] == "failed" and "timeout" in results["timeout"]["error"]
    assert results["cancelled"]["status"] == "cancelled"
    assert (await api.get(f"{W}/runs/paused", token="alice")).data == []


async def test_an_approval_past_its_deadline_resumes_as_timeout(server: RunningServer, api: ApiClient,
                                                                people: dict) -> None:
    graph = json.loads(json.dumps(APPROVAL_GRAPH))
    graph["nodes"][1]["config"]["timeoutSeconds"] = 1
    graph["edges"].append(edge("review", "dropped", "timeout"))
    wid = await published(api, graph)
    run = await finished(api, await start_run(api, wid, {"what": "v3"}))
    assert run["status"] == "paused" and run["pauseDeadline"]
    engine = server.platform.services.workflows
    assert engine.expire_pauses() == 0
    from platform_server.features.workflows.models import WorkflowRun
    WorkflowRun.update(pause_deadline="2000-01-01T00:00:00").where(WorkflowRun.id == int(run["id"])).execute()
    assert engine.expire_pauses() == 1
    done = await finished(api, run["id"], want=("succeeded", "failed"))
    assert done["status"] == "succeeded" and done["output"] == "dropped" and done["steps"][1]["outcome"] == "timeout"


async def test_an_agent_tool_call_needing_approval_pauses_the_run(api: ApiClient, people: dict, agent_id: str,
                                                                  llm: ScriptedOpenAI) -> None:
    r = await api.put(f"/api/v1/agents/{agent_id}/tools", {"toolNames": ["write_file"]}, token="alice")
    assert r.status == 200, r.body
    graph = {"nodes": [node("start", "start"), node("w", "agent", agentId=agent_id, message="write it"),
                       node("end", "end")], "edges": [edge("start", "w"), edge("w", "end")]}
    wid = await published(api, graph)
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("write_file", {"path": "out.txt", "content": "hello"})]),
                Script(text="Written."))
    run = await finished(api, await start_run(api, wid, {}))
    assert run["status"] == "paused" and run["pausedNodeId"] == "w" and "write_file" in run["pauseReason"]
    r = await api.post(f"{W}/runs/{run['id']}/resume", {"outcome": "approved", "pauseToken": run["pauseToken"]},
                       token="alice")
    assert r.status == 200, r.body
    done = await finished(api, run["id"], want=("succeeded", "failed"))
    assert done["status"] == "succeeded" and done["output"] == "Written.", done
    r = await api.get(f"/api/v1/agents/{agent_id}/workspace/files/out.txt", token="alice")
    assert r.raw == b"hello"


async def test_workflows_and_runs_are_invisible_from_another_workspace(api: ApiClient, people: dict) -> None:
    wid = await published(api, APPROVAL_GRAPH)
    run = await finished(api, await start_run(api, wid, {"what": "x"}))
    other = people["dave"]["workspace"]
    for path in (f"{W}/{wid}", f"{W}/runs/{run['id']}", f"{W}/{wid}/runs"):
        assert (await api.get(path, token="dave", workspace=other)).status == 404, path
    assert (await api.get(f"{W}/{wid}", token="dave")).status == 403
    assert (await api.get(W, token="dave", workspace=other)).data == []
    assert (await api.get(f"{W}/runs/paused", token="dave", workspace=other)).data == []
    r = await api.post(f"{W}/runs/{run['id']}/resume", {"outcome": "approved"}, token="dave", workspace=other)
    assert r.status == 404
    assert (await api.post(f"{W}/{wid}/runs", {}, token="dave", workspace=other)).status == 404


async def test_templates_and_generation_from_a_description(api: ApiClient, people: dict, agent_id: str,
                                                           llm: ScriptedOpenAI) -> None:
    templates = (await api.get(f"{W}/draft/templates", token="carol")).data
    assert {t["key"] for t in templates} >= {"single-agent", "agent-with-approval", "classify-and-route"}
    graph = agent_branch_graph(agent_id)
    llm.enqueue(Script(text="Here you go:\n```json\n" + json.dumps(graph) + "\n```"))
    r = await api.post(f"{W}/draft/generate", {"description": "check things and branch"}, token="bob")
    assert r.status == 200, r.body
    assert r.data["graph"] == graph and r.data["compile"]["ok"] is True
    prompt = llm.requests[-1]["messages"][0]["content"]
    assert "Checker" in prompt and agent_id in prompt
    llm.enqueue(Script(text="I cannot do that"))
    r = await api.post(f"{W}/draft/generate", {"description": "x"}, token="bob")
    assert r.data["graph"] is None and r.data["compile"]["diagnostics"][0]["code"] == "INVALID_GRAPH"
    assert (await api.post(f"{W}/draft/generate", {"description": ""}, token="bob")).status == 400


async def test_after_a_restart_paused_runs_resume_and_running_ones_have_failed(tmp_path: Any,
                                                                               llm: ScriptedOpenAI) -> None:
    data_dir = str(tmp_path / "data")
    first = await start_server(data_dir)
    try:
        api = first.client
        await create_personas(api)
        await use_fake_openai(api, llm.url)
        agent = await make_agent(api, name="Slow")
        paused_wid = await published(api, APPROVAL_GRAPH)
        paused = await finished(api, await start_run(api, paused_wid, {"what": "v9"}))
        slow_graph = {"nodes": [node("start", "start"), node("s", "agent", agentId=agent, message="go"),
                                node("end", "end")], "edges": [edge("start", "s"), edge("s", "end")]}
        slow_wid = await published(api, slow_graph)
        llm.enqueue(Script(text=[f"w{i} " for i in range(400)], delay_s=0.05))
        asked = len(llm.requests)
        running = await start_run(api, slow_wid, {})
        await eventually(lambda: len(llm.requests) > asked, what="the slow agent answering")  # stopped midway
    finally:
        await first.stop()
    second = await start_server(data_dir)
    try:
        api = second.client
        tokens = dict(first.client.tokens)
        api.tokens.update(tokens)
        run = (await api.get(f"{W}/runs/{running}", token="alice")).data
        assert run["status"] == "failed" and "Interrupted" in run["error"]
        assert run["steps"][-1]["status"] == "failed"
        again = (await api.get(f"{W}/runs/{paused['id']}", token="alice")).data
        assert again["status"] == "paused" and again["pauseToken"] == paused["pauseToken"]
        r = await api.post(f"{W}/runs/{paused['id']}/resume",
                           {"outcome": "approved", "pauseToken": again["pauseToken"],
                            "payload": {"note": "after restart"}}, token="alice")
        assert r.status == 200, r.body
        done = await finished(api, paused["id"], want=("succeeded", "failed"))
        assert done["status"] == "succeeded" and done["output"] == "shipped v9 (after restart)"
    finally:
        await second.stop()
