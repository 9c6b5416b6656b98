"""Workspace-1 resources of the areas beyond the core (wiki, automation, memory, skills), for the route walks.

Each function creates its area's resources as alice through the API (rows only a background pass produces, and
no route creates, are written through the area's own code) and answers `{path suffix: id}`: the suffix ends with
the path parameter it fills, e.g. `"transformations/runs/{runId}"` (see `Seeded.fill`).
"""
from __future__ import annotations

import json
from typing import Any

from tests.helpers.client import ApiClient, Response
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.memory import dream_answer, fact
from tests.helpers.wiki import KB, page, pages_answer, wait_idle

MARK = "WS1MARK"  # every workspace-1 resource carries it; no answer to an outsider may (seed.py re-exports it)
PIPELINE = [{"type": "extract"}, {"type": "chunk", "size": 400, "overlap": 50}, {"type": "embed"},
            {"type": "synthesize", "maxChunksPerCall": 4}, {"type": "link"}]
APPROVAL_GRAPH = {
    "nodes": [{"id": "start", "type": "start", "config": {}},
              {"id": "review", "type": "approval", "config": {"message": f"Ship {MARK}?"}},
              {"id": "done", "type": "end", "config": {"output": MARK}}],
    "edges": [{"from": "start", "to": "review"}, {"from": "review", "to": "done", "condition": "approved"}],
}


async def ok(res: Response) -> Any:
    assert res.status == 200, res.body
    return res.data


async def seed_wiki(api: ApiClient, llm: ScriptedOpenAI, agent: str) -> dict[str, str]:
    """A KB whose one material went through an enabled pipeline (with a transform step) into two linked pages."""
    emb = await ok(await api.post("/api/v1/models/fake/models", {"modelName": "fake-embedding", "modelType": "embedding"},
                                  token="alice"))
    await ok(await api.post("/api/v1/models/embedding/default", {"modelId": emb["id"]}, token="alice"))
    kb = (await ok(await api.post(KB, {"name": f"kb-{MARK}", "description": MARK}, token="alice")))["id"]
    transformation = (await ok(await api.post("/api/v1/wiki/transformations", {
        "name": f"t-{MARK}", "prompt": f"{MARK} {{{{content}}}}"}, token="alice")))["id"]
    pipeline = (await ok(await api.post(f"{KB}/{kb}/pipelines", {"name": "walk", "steps": [
        *PIPELINE, {"type": "transform", "transformationId": transformation}]}, token="alice")))["id"]
    llm.enqueue(Script(text=pages_answer(page("alpha", f"Alpha {MARK}", f"# Alpha\n\n{MARK} see [[beta]].", ["c1"]),
                                         page("beta", f"Beta {MARK}", f"# Beta\n\n{MARK} see [[alpha]].", ["c1"]))),
                Script(text=f"gist {MARK}"))
    raw = (await ok(await api.post(f"{KB}/{kb}/raw/text", {"title": f"raw {MARK}", "text": f"{MARK} alpha and beta."},
                                   token="alice")))["id"]
    await wait_idle(api, kb)
    alpha = await ok(await api.get(f"{KB}/{kb}/pages/alpha", token="alice"))
    cites = await ok(await api.get(f"/api/v1/wiki/kb/{kb}/pages/{alpha['id']}/citations", token="alice"))
    (run,) = await ok(await api.get(f"{KB}/{kb}/pipelines/{pipeline}/runs", token="alice"))
    t_runs = await ok(await api.get("/api/v1/wiki/transformations/runs", token="alice"))
    lint = await ok(await api.post(f"{KB}/{kb}/lint/broken-links", token="alice"))
    permission = await ok(await api.post(f"{KB}/{kb}/agents/{agent}/page-type-permissions",
                                         {"pageType": "entity", "read": "deny"}, token="alice"))
    return {
        "/wiki/knowledge-bases/{id}": kb, "{kbId}": kb, "{rawId}": raw, "{slug}": "alpha", "{slugA}": "alpha",
        "{slugB}": "beta", "{pageId}": alpha["id"], "{chunkId}": cites[0]["chunkId"], "pipelines/{id}": pipeline,
        "pipeline-runs/{runId}": run["id"], "/wiki/transformations/{id}": transformation,
        "transformations/runs/{runId}": t_runs[0]["id"], "broken-links/jobs/{jobId}": lint["jobId"],
        "page-type-permissions/{id}": permission["id"],
    }


async def seed_wiki_research(api: ApiClient, kb: str) -> dict[str, str]:
    """A research session (its rounds call the model in the background: started last)."""
    session = await ok(await api.post("/api/v1/wiki/research/start", {"kbId": kb, "question": f"What is {MARK}?"},
                                      token="alice"))
    return {"research/stream/{sessionId}": session["sessionId"]}


async def seed_memory(api: ApiClient, llm: ScriptedOpenAI, agent: str, conversation: str) -> dict[str, str]:
    """Two facts of one key (a contradiction) from the seeded conversation, then a dream with one entry."""
    base = f"/api/v1/memory/{agent}"
    llm.enqueue(Script(text=json.dumps([fact("city", f"Lives in Paris {MARK}"), fact("city", f"Lives in Rome {MARK}")])))
    await ok(await api.post(f"{base}/summarize/{conversation}", token="alice"))
    facts = await ok(await api.get(f"{base}/facts", token="alice"))
    contradictions = await ok(await api.get(f"{base}/facts/contradictions", token="alice"))
    llm.enqueue(dream_answer(f"dream {MARK}", {"key": "pet", "action": "add", "after": f"Has a cat {MARK}"}))
    report = await ok(await api.post(f"{base}/emergence", token="alice"))
    return {"{factId}": facts[0]["id"], "contradictions/{contradictionId}": contradictions[0]["id"],
            "reports/{reportId}": report["id"], "entries/{key}": report["entries"][0]["key"]}


async def seed_automation(api: ApiClient, agent: str, conversation: str) -> dict[str, str]:
    """A cron job, an event trigger, a goal, a team and a workflow; their runs are started by `seed_runs`."""
    job = await ok(await api.post("/api/v1/cron-jobs", {
        "name": f"cron-{MARK}", "agentId": agent, "cronExpression": "0 3 1 1 *", "message": MARK}, token="alice"))
    trigger = await ok(await api.post("/api/v1/triggers", {
        "name": f"trigger-{MARK}", "agentId": agent, "type": "event", "eventType": "walk.event", "message": MARK},
        token="alice"))
    goal = await ok(await api.post("/api/v1/goals", {"conversationId": conversation, "agentId": agent,
                                                     "title": f"goal {MARK}", "criteria": [MARK]}, token="alice"))
    member = await ok(await api.post("/api/v1/agents", {"name": f"member-{MARK}", "systemPrompt": MARK}, token="alice"))
    team = await ok(await api.post("/api/v1/teams", {"name": f"team-{MARK}", "leadAgentId": agent,
                                                     "memberAgentIds": [member["id"]]}, token="alice"))
    flow = (await ok(await api.post("/api/v1/workflows", {"name": f"flow-{MARK}"}, token="alice")))["id"]
    await ok(await api.put(f"/api/v1/workflows/{flow}/draft", {"graph": APPROVAL_GRAPH}, token="alice"))
    await ok(await api.post(f"/api/v1/workflows/{flow}/publish", token="alice"))
    return {"/cron-jobs/{id}": job["id"], "cron-runs/{cronJobId}": job["id"], "/triggers/{id}": trigger["id"],
            "/goals/{id}": goal["id"], "{teamId}": team["id"], "/workflows/{id}": flow}


async def seed_runs(api: ApiClient, ids: dict[str, str]) -> dict[str, str]:
    """A workflow run (it waits at its approval node) and a team run (it talks to the model in the background)."""
    run = await ok(await api.post(f"/api/v1/workflows/{ids['/workflows/{id}']}/runs", {"input": {"what": MARK}},
                                  token="alice"))
    team_run = await ok(await api.post(f"/api/v1/teams/{ids['{teamId}']}/runs", {"goal": f"goal {MARK}"}, token="alice"))
    return {"workflows/runs/{runId}": run["id"], "team-runs/{runId}": team_run["id"]}


async def seed_skills_extra(api: ApiClient, user_id: str) -> dict[str, str]:
    """A curator report, a restore point, an install task (of an address that refuses: it fails), a routine
    candidate (mined from requests over days: written directly) and a built-in skill template (global)."""
    from platform_server.features.skills.curator_models import RoutineCandidate

    report = await ok(await api.post("/api/v1/skills/curator/dry-run", token="alice"))
    snapshot = await ok(await api.post("/api/v1/skills/curator/snapshots", {"reason": MARK}, token="alice"))
    task = await ok(await api.post("/api/v1/skills/install/start", {"url": "http://127.0.0.1:9/walk.zip"}, token="alice"))
    routine = RoutineCandidate.create(workspace_id=1, user_id=int(user_id), pattern=f"report {MARK}",
                                      tokens=["report"], examples=[f"report {MARK}"], occurrences=3, distinct_days=3)
    templates = await ok(await api.get("/api/v1/skill-templates", token="alice"))
    return {"curator/reports/{runId}": report["id"], "snapshots/{snapshotId}": snapshot["id"],
            "install/status/{taskId}": task["taskId"], "install/cancel/{taskId}": task["taskId"],
            "routines/{id}": str(routine.id), "/skill-templates/{id}": templates[0]["id"]}


def area_bodies(ids: dict[str, str]) -> dict[tuple[str, str], Any]:
    """Valid bodies for these areas' writes, so a refusal comes from the workspace check, not from validation."""
    kb, wiki, mem = "/api/v1/wiki/knowledge-bases/{kbId}", "/api/v1/wiki", "/api/v1/memory/{agentId}"
    transform = {"kbId": ids["{kbId}"]}
    return {
        ("PUT", "/api/v1/wiki/knowledge-bases/{id}"): {"name": "hacked"},
        ("PUT", "/api/v1/wiki/knowledge-bases/{id}/config"): {},
        ("PUT", "/api/v1/wiki/knowledge-bases/{id}/page-type-profile"): {
            "defaultType": "note", "pageTypes": [{"name": "note"}]},
        ("POST", "/api/v1/wiki/knowledge-bases/{id}/page-type-profile/validate"): {
            "defaultType": "note", "pageTypes": [{"name": "note"}]},
        ("PUT", "/api/v1/wiki/knowledge-bases/{id}/source-directory"): {"path": None},
        ("POST", f"{kb}/pipelines"): {"name": "hacked", "steps": PIPELINE},
        ("POST", f"{kb}/pipelines/validate"): {"name": "hacked", "steps": PIPELINE},
        ("POST", f"{kb}/raw/text"): {"title": "hacked", "text": "hacked"},
        ("DELETE", f"{kb}/pages/batch"): {"slugs": ["alpha"]},
        ("PUT", f"{kb}/pages/{{slug}}"): {"markdown": "hacked"},
        ("POST", f"{kb}/pages/{{slug}}/rename"): {"newSlug": "hacked"},
        ("POST", f"{kb}/agents/{{agentId}}/page-type-permissions"): {"pageType": "entity", "read": "allow"},
        ("POST", f"{wiki}/kb/{{kbId}}/search-preview"): {"query": MARK},
        ("POST", f"{wiki}/kb/{{kbId}}/pages/{{slug}}/enrich"): {},
        ("PUT", f"{wiki}/transformations/{{id}}"): {"name": "hacked"},
        ("POST", f"{wiki}/transformations/{{id}}/apply"): {**transform, "slug": "alpha"},
        ("POST", f"{wiki}/transformations/{{id}}/aggregate"): transform,
        ("POST", f"{wiki}/transformations/runs/{{runId}}/save-as-page"): {"slug": "hacked"},
        ("POST", f"{mem}/dreaming/focused"): {"topic": MARK},
        ("POST", f"{mem}/facts/contradictions/{{contradictionId}}/resolve"): {"resolution": "KEEP_A"},
        ("POST", f"{mem}/dream/reports/{{reportId}}/entries/{{key}}/edit"): {"after": "hacked"},
        ("POST", f"{mem}/facts/{{factId}}/feedback"): {"value": "UNHELPFUL"},
        ("POST", f"{mem}/facts/{{factId}}/edit"): {"statement": "hacked"},
        ("PUT", f"{mem}/files/{{path}}"): {"content": "hacked"},
        ("PUT", "/api/v1/workflows/{id}"): {"name": "hacked"},
        ("PUT", "/api/v1/workflows/{id}/draft"): {"graph": APPROVAL_GRAPH},
        ("POST", "/api/v1/workflows/{id}/runs"): {"input": {}},
        ("POST", "/api/v1/workflows/runs/{runId}/resume"): {"outcome": "rejected"},
        ("PUT", "/api/v1/teams/{teamId}"): {"name": "hacked"},
        ("POST", "/api/v1/teams/{teamId}/runs"): {"goal": "hacked"},
        ("POST", "/api/v1/team-runs/{runId}/cancel"): {},
        ("PUT", "/api/v1/cron-jobs/{id}"): {"name": "hacked"},
        ("PUT", "/api/v1/cron-jobs/{id}/toggle"): {"enabled": False},
        ("PUT", "/api/v1/triggers/{id}"): {"name": "hacked"},
        ("PATCH", "/api/v1/goals/{id}"): {"title": "hacked"},
        ("POST", "/api/v1/goals/{id}/abandon"): {},
        ("POST", "/api/v1/goals/{id}/criteria"): {"criterion": "hacked"},
        ("POST", "/api/v1/skills/routines/{id}/promote"): {},
        ("PUT", "/api/v1/skills/{id}/files/{path}"): {"content": "hacked"},
    }
