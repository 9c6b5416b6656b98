"""Admin runtime (snapshot, friendly stop, recycle, sweep), agent state, dashboard and token usage."""
from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.client import iter_sse
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script


async def _start_slow(env: ChatEnv, cid: str, script: Script) -> tuple[Any, Any]:
    env.llm.enqueue(script)
    r = await env.api.session.post(env.api.base_url + "/api/v1/chat/stream",
                                   json={"agentId": env.agent_id, "conversationId": cid, "message": "go"},
                                   headers={"Authorization": "Bearer " + env.api.tokens["bob"]})
    it = iter_sse(r)
    while (await it.__anext__()).event != "content_delta":
        pass
    return r, it


async def test_the_snapshot_shows_in_flight_turns_to_global_admins_only(env: ChatEnv) -> None:
    r, it = await _start_slow(env, "snap", Script(text=[f"x{i} " for i in range(30)], delay_s=0.03))
    snap = await env.api.get("/api/v1/admin/agent-runtime/snapshot", token="alice")
    assert snap.status == 200
    running = [t for t in snap.data["runs"] if t["running"]]
    assert snap.data["summary"]["running"] == len(running) and running[0]["subscriberCount"] == 1
    assert running and running[0]["conversationId"] == "snap" and running[0]["subscribers"] == 1
    assert (await env.api.get("/api/v1/admin/agent-runtime/snapshot", token="bob")).status == 403
    state = await env.api.get(f"/api/v1/agents/{env.agent_id}/state", token="bob")
    assert state.data["state"] == "running" and state.data["myRunningConversations"] == ["snap"]
    [ev async for ev in it]
    r.close()
    state = await env.api.get(f"/api/v1/agents/{env.agent_id}/state", token="bob")
    assert state.data["state"] == "idle"


async def test_a_friendly_stop_winds_the_turn_down_at_its_next_checkpoint(env: ChatEnv) -> None:
    r, it = await _start_slow(env, "friendly", Script(text=[f"y{i} " for i in range(200)], delay_s=0.02))
    res = await env.api.post("/api/v1/admin/agent-runtime/runs/friendly/stop", token="alice")
    assert res.data == {"stopRequested": 1}
    tail = [ev async for ev in it]
    r.close()
    assert tail[-1].data["status"] == "stopped"
    assert (await env.api.post("/api/v1/admin/agent-runtime/runs/friendly/stop", token="alice")).status == 404


async def test_recycle_frees_a_turn_whose_model_hangs(env: ChatEnv) -> None:
    r, it = await _start_slow(env, "hung", Script(text=["a", "b", "c", "d"], hang_after_chunks=3))
    res = await env.api.post("/api/v1/admin/agent-runtime/runs/hung/recycle", token="alice")
    assert res.data == {"recycled": 1}
    tail = [ev async for ev in it]
    r.close()
    assert tail[-1].event == "done"
    status = await env.api.get("/api/v1/conversations/hung/status", token="bob")
    assert status.data["streamStatus"] == "idle"


@pytest.mark.config(stuck_turn_s=0.2)
async def test_sweep_recycles_turns_that_went_quiet(env: ChatEnv) -> None:
    r, it = await _start_slow(env, "quiet", Script(text=["a", "b", "c"], hang_after_chunks=3))

    async def swept() -> Any:  # a sweep before the turn is 0.2 s quiet recycles nothing
        res = await env.api.post("/api/v1/admin/agent-runtime/sweep", token="alice")
        return res.data["recycled"] and res

    res = await eventually(swept, interval=0.05)
    assert res.data["recycled"] == 1 and res.data["conversationIds"] == ["quiet"]
    r.close()


async def test_dashboard_and_token_usage_count_the_stored_tokens_of_the_workspace(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="one", prompt_tokens=10, completion_tokens=4),
                    Script(text="two", prompt_tokens=20, completion_tokens=6))
    await env.stream("a", conversation_id="u1")
    await env.stream("b", conversation_id="u2", token="bob")
    overview = await env.api.get("/api/v1/dashboard/stats", token="carol")
    assert overview.data["conversations"] == 2 and overview.data["agents"] == 1
    assert overview.data["total"]["promptTokens"] == 30 and overview.data["today"]["completionTokens"] == 10
    trend = await env.api.get("/api/v1/dashboard/trend", params={"days": "3"}, token="carol")
    assert len(trend.data) == 3 and trend.data[-1]["totalTokens"] == 40 and trend.data[-1]["conversations"] == 2
    usage = await env.api.get("/api/v1/token-usage", params={"groupBy": "user"}, token="alice")
    assert {i["userId"]: i["totalTokens"] for i in usage.data["items"]} == {
        env.people["alice"]["id"]: 14, env.people["bob"]["id"]: 26}
    by_model = await env.api.get("/api/v1/token-usage", token="alice")
    assert by_model.data["items"][0]["model"] == "scripted"
    assert (await env.api.get("/api/v1/token-usage", params={"groupBy": "nope"}, token="alice")).status == 400
    assert (await env.api.get("/api/v1/dashboard/trend", params={"days": "0"}, token="alice")).status == 400
    other = await env.api.get("/api/v1/dashboard/stats", token="dave", workspace=env.people["dave"]["workspace"])
    assert other.data["conversations"] == 0 and other.data["total"]["totalTokens"] == 0
