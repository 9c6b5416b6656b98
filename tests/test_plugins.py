"""Plugins: enabling registers real tools agents can call; configuration is validated."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.helpers.server import RunningServer


async def test_plugins_are_listed_and_only_a_global_admin_changes_them(env: ChatEnv) -> None:
    r = await env.api.get("/api/v1/plugins", token="carol")
    assert {p["name"] for p in r.data} >= {"calculator", "units"}
    calc = next(p for p in r.data if p["name"] == "calculator")
    assert calc["enabled"] is False and calc["config"] == {"precision": 10} and calc["source"] == "builtin"
    assert (await env.api.post("/api/v1/plugins/calculator/enable", token="bob")).status == 403
    assert (await env.api.get("/api/v1/plugins/nope", token="bob")).status == 404
    r = await env.api.post("/api/v1/plugins/calculator/enable", token="alice")
    assert r.data["enabled"] is True and r.data["tools"] == ["calculate"]
    # the plugin's own configSchema refuses these (the document cannot tie a body to `{name}`): a 409; no object, a 400
    for bad in ({"precision": 99}, {"precision": "x"}, {"other": 1}):
        r = await env.api.put("/api/v1/plugins/calculator/config", bad, token="alice")
        assert r.status == 409 and r.body["msg"].startswith(next(iter(bad))), r.body
    assert (await env.api.put("/api/v1/plugins/calculator/config", [1], token="alice")).status == 400
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


class KeyedPlugin:
    name = "keyed"
    version = "0.1.0"
    description = "A plugin with a write-only API key"
    config_schema = {"apiKey": {"type": "string", "writeOnly": True}, "region": {"type": "string", "default": "eu"}}

    def tools(self, config: dict[str, Any]) -> list[dict[str, Any]]:
        return []


async def test_write_only_plugin_settings_are_masked_and_the_mask_keeps_them(env: ChatEnv, server: RunningServer) -> None:
    from platform_server.features.plugins.models import PluginState

    server.platform.services.plugins.plugins["keyed"] = (KeyedPlugin(), "entry_point")
    r = await env.api.put("/api/v1/plugins/keyed/config", {"apiKey": "******"}, token="alice")
    assert r.status == 409  # nothing stored to keep yet: the stored state, not the body, refuses it
    r = await env.api.put("/api/v1/plugins/keyed/config", {"apiKey": "SECRET-PLUGIN-KEY", "region": "us"}, token="alice")
    assert r.status == 200 and r.data["config"] == {"apiKey": "******", "region": "us"}
    for path in ("/api/v1/plugins", "/api/v1/plugins/keyed"):
        assert "SECRET-PLUGIN-KEY" not in (await env.api.get(path, token="carol")).raw.decode()
    r = await env.api.put("/api/v1/plugins/keyed/config", {"apiKey": "******", "region": "ap"}, token="alice")
    assert r.data["config"] == {"apiKey": "******", "region": "ap"}
    assert PluginState.get(PluginState.name == "keyed").config == {"apiKey": "SECRET-PLUGIN-KEY", "region": "ap"}


async def test_a_huge_calculation_is_refused_at_once_and_never_freezes_other_requests(env: ChatEnv) -> None:
    import asyncio
    import time

    await env.api.post("/api/v1/plugins/calculator/enable", token="alice")
    await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["calculate"]}, token="alice")
    # (9**9999)**999 is a 31-million-bit integer: seconds of CPU on the IOLoop before the fix.
    env.llm.enqueue(
        Script(tool_calls=[ScriptedToolCall("calculate", {"expression": "(9**9999)**999"})]),
        Script(tool_calls=[ScriptedToolCall("calculate", {"expression": "round(1,-10**9)"})]),
        Script(tool_calls=[ScriptedToolCall("calculate", {"expression": "2**100 * 3"})]),
        Script(text="done"),
    )
    started = time.monotonic()
    chat = asyncio.ensure_future(env.stream("compute"))
    slowest = 0.0
    while not chat.done():
        t0 = time.monotonic()
        assert (await env.api.get("/api/v1/system/health", token="carol")).status == 200
        slowest = max(slowest, time.monotonic() - t0)
        await asyncio.sleep(0.01)
    events = chat.result()
    took = time.monotonic() - started
    results = [e.data for e in events if e.event == "tool_call_completed"]
    assert results[0]["success"] is False and "too large" in results[0]["result"], results[0]
    assert results[1]["success"] is False and "round: at most" in results[1]["result"], results[1]
    assert results[2]["success"] is True and results[2]["result"] == str(2**100 * 3)
    # Generous bounds for a loaded CI machine; the unbounded evaluation held the loop for seconds.
    assert slowest < 1.0 and took < 5.0, (slowest, took)
