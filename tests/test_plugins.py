"""Plugins: enabling registers real tools agents can call; configuration is validated."""
from __future__ import annotations

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script, ScriptedToolCall


async def test_plugins_are_listed_and_only_a_global_admin_changes_them(env: ChatEnv) -> None:
    r = await env.api.get("/api/v1/plugins", token="carol")
    assert {p["name"] for p in r.data} >= {"calculator", "units"}
    calc = next(p for p in r.data if p["name"] == "calculator")
    assert calc["enabled"] is False and calc["config"] == {"precision": 10} and calc["source"] == "builtin"
    assert (await env.api.post("/api/v1/plugins/calculator/enable", token="bob")).status == 403
    assert (await env.api.get("/api/v1/plugins/nope", token="bob")).status == 404
    r = await env.api.post("/api/v1/plugins/calculator/enable", token="alice")
    assert r.data["enabled"] is True and r.data["tools"] == ["calculate"]
    for bad in ({"precision": 99}, {"precision": "x"}, {"other": 1}):
        assert (await env.api.put("/api/v1/plugins/calculator/config", bad, token="alice")).status == 400
    r = await env.api.put("/api/v1/plugins/calculator/config", {"precision": 2}, token="alice")
    assert r.data["config"] == {"precision": 2}
    r = await env.api.post("/api/v1/plugins/calculator/disable", token="alice")
    assert r.data["enabled"] is False and r.data["tools"] == []
    names = {t["name"] for t in (await env.api.get("/api/v1/tools/available", token="bob")).data}
    assert "calculate" not in names


async def test_an_enabled_plugin_tool_answers_an_agent(env: ChatEnv) -> None:
    await env.api.post("/api/v1/plugins/calculator/enable", token="alice")
    await env.api.put("/api/v1/plugins/calculator/config", {"precision": 3}, token="alice")
    await env.api.post("/api/v1/plugins/units/enable", token="alice")
    await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["calculate", "convert_units"]}, token="alice")
    env.llm.enqueue(
        Script(tool_calls=[ScriptedToolCall("calculate", {"expression": "2**10 + sqrt(2)"})]),
        Script(tool_calls=[ScriptedToolCall("calculate", {"expression": "__import__('os')"})]),
        Script(tool_calls=[ScriptedToolCall("convert_units", {"value": 100, "from": "C", "to": "F"})]),
        Script(text="done"),
    )
    events = await env.stream("compute")
    results = [e.data for e in events if e.event == "tool_call_completed"]
    assert results[0] == {**results[0], "success": True, "result": "1025.414"}
    assert results[1]["success"] is False and "cannot evaluate" in results[1]["result"]
    assert results[2]["result"] == "212 F"
