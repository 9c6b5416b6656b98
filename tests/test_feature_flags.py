"""Feature flags gate their feature everywhere: routes answer 403, loops skip, tools leave the model's list."""
from __future__ import annotations

import json
from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script
from tests.helpers.server import RunningServer


async def switch(api: ApiClient, key: str, enabled: bool) -> None:
    r = await api.put(f"/api/v1/feature-flags/{key}", {"enabled": enabled}, token="alice")
    assert r.status == 200, r.body


async def assert_disabled(api: ApiClient, method: str, path: str, flag: str, **kwargs: Any) -> None:
    r = await api.request(method, path, token="alice", **kwargs)
    assert r.status == 403, (path, r.body)
    assert r.body["code"] == 403 and r.body["msg"] == f"Feature {flag} is disabled"


async def offered_tools(env: ChatEnv, conversation_id: str) -> list[str]:
    env.llm.enqueue(Script(text="ok"))
    await env.stream("hello", conversation_id=conversation_id)
    return [t["function"]["name"] for t in env.llm.requests[-1].get("tools") or []]


async def test_every_seeded_flag_is_one_the_code_reads_and_the_features_are_on_by_default_except_talk(
    api: ApiClient, people: dict
) -> None:
    flags = {f["key"]: f["enabled"] for f in (await api.get("/api/v1/feature-flags", token="carol")).data}
    assert flags == {"talk_mode": False, "wiki": True, "dreaming": True, "workflows": True, "channels": True,
                     "skills_curator": True, "team_runs": True, "wiki.hot_cache.enabled": True}
    from platform_server.features.settings import service

    assert service.is_enabled("wiki") and not service.is_enabled("talk_mode") and not service.is_enabled("nope")


async def test_the_wiki_flag_closes_the_wiki_routes_and_removes_wiki_search_from_the_tools(env: ChatEnv) -> None:
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["wiki_search", "calculator"]},
                          token="alice")
    assert r.status == 200, r.body
    assert "wiki_search" in await offered_tools(env, "c1")
    assert (await env.api.get("/api/v1/wiki/knowledge-bases", token="alice")).status == 200
    await switch(env.api, "wiki", False)
    await assert_disabled(env.api, "GET", "/api/v1/wiki/knowledge-bases", "wiki")
    await assert_disabled(env.api, "POST", "/api/v1/wiki/knowledge-bases", "wiki", json_body={"name": "KB"})
    assert "wiki_search" not in await offered_tools(env, "c2")
    await switch(env.api, "wiki", True)
    assert (await env.api.get("/api/v1/wiki/knowledge-bases", token="alice")).status == 200


async def test_the_dreaming_flag_closes_the_dreaming_routes_and_the_nightly_loop_skips(env: ChatEnv,
                                                                                      server: RunningServer) -> None:
    base = f"/api/v1/memory/{env.agent_id}"
    assert (await env.api.get(f"{base}/dreaming/status", token="alice")).status == 200
    await switch(env.api, "dreaming", False)
    await assert_disabled(env.api, "GET", f"{base}/dreaming/status", "dreaming")
    await assert_disabled(env.api, "GET", f"{base}/dream/reports", "dreaming")
    assert (await env.api.get(f"{base}/facts", token="alice")).status == 200  # memory itself stays
    assert server.platform.services.memory_nightly.enabled() is False


async def test_the_workflows_flag_closes_the_routes_and_the_timeout_loop_skips(api: ApiClient, people: dict,
                                                                              server: RunningServer) -> None:
    from tests.test_workflows import APPROVAL_GRAPH, edge, finished, published, start_run

    graph = json.loads(json.dumps(APPROVAL_GRAPH))
    graph["nodes"][1]["config"]["timeoutSeconds"] = 1
    graph["edges"].append(edge("review", "dropped", "timeout"))
    wid = await published(api, graph)
    run = await finished(api, await start_run(api, wid, {"what": "v3"}))
    from platform_server.features.workflows.models import WorkflowRun

    WorkflowRun.update(pause_deadline="2000-01-01T00:00:00").where(WorkflowRun.id == int(run["id"])).execute()
    await switch(api, "workflows", False)
    await assert_disabled(api, "GET", "/api/v1/workflows", "workflows")
    await assert_disabled(api, "GET", f"/api/v1/workflows/runs/{run['id']}", "workflows")
    loop = server.platform.services.workflow_timeouts
    assert loop.tick() == 0
    await switch(api, "workflows", True)
    assert loop.tick() == 1


async def test_the_channels_flag_closes_channel_routes_and_the_public_webhooks(api: ApiClient, people: dict) -> None:
    assert (await api.get("/api/v1/channels", token="alice")).status == 200
    await switch(api, "channels", False)
    await assert_disabled(api, "GET", "/api/v1/channels", "channels")
    r = await api.request("POST", "/api/v1/channels/webhook/im_a", json_body={"text": "hi"})
    assert r.status == 403 and r.body["msg"] == "Feature channels is disabled"


async def test_the_skills_curator_flag_closes_the_curator_routes_and_scheduled_scans_skip(
    api: ApiClient, people: dict, server: RunningServer
) -> None:
    from tests.test_skills_curator import curator_loop, seed_library

    await seed_library(api)
    await switch(api, "skills_curator", False)
    await assert_disabled(api, "GET", "/api/v1/skills/curator/status", "skills_curator")
    assert (await api.get("/api/v1/skills", token="alice")).status == 200  # skills themselves stay
    assert await curator_loop(server, 25).tick() == []
    await switch(api, "skills_curator", True)
    assert len(await curator_loop(server, 25).tick()) == 1


async def test_the_team_runs_flag_closes_team_routes_and_removes_the_team_run_tool(env: ChatEnv) -> None:
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["team_run"]}, token="alice")
    assert r.status == 200, r.body
    assert "team_run" in await offered_tools(env, "c1")
    await switch(env.api, "team_runs", False)
    await assert_disabled(env.api, "GET", "/api/v1/teams", "team_runs")
    await assert_disabled(env.api, "GET", "/api/v1/team-runs/1", "team_runs")
    assert "team_run" not in await offered_tools(env, "c2")
