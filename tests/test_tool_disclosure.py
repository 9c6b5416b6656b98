"""Disclosure tiers decide what the model is offered: core tools always, extension tools after tool_search."""
from __future__ import annotations

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script, ScriptedToolCall


def offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


async def test_extension_tools_are_held_back_until_the_model_asks_for_them(env: ChatEnv) -> None:
    tools = {t["name"]: t for t in (await env.api.get("/api/v1/tools", token="alice")).data}
    r = await env.api.put(f"/api/v1/tools/{tools['get_current_time']['id']}/disclosure-tier", {"tier": "extension"},
                          token="alice")
    assert r.status == 200, r.body
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("get_current_time", {})]),
                    Script(tool_calls=[ScriptedToolCall("tool_search", {"query": "current time and date"})]),
                    Script(tool_calls=[ScriptedToolCall("get_current_time", {"timezone": "UTC"})]),
                    Script(text="It is now."))
    events = await env.stream("what time is it?")
    first, second, third = env.llm.requests[-4], env.llm.requests[-3], env.llm.requests[-2]
    assert "get_current_time" not in offered(first) and "tool_search" in offered(first) and "read_file" in offered(first)
    done = [e.data for e in events if e.event == "tool_call_completed"]
    assert done[0]["success"] is False  # not offered yet: refused without running
    assert done[1]["success"] is True and "get_current_time" in done[1]["result"]
    assert "get_current_time" not in offered(second) and "get_current_time" in offered(third)
    assert done[2]["success"] is True
    # The next answer starts from the core tier again.
    env.llm.enqueue(Script(text="ok"))
    await env.stream("thanks")
    assert "get_current_time" not in offered(env.llm.requests[-1])


async def test_with_every_tool_in_the_core_tier_tool_search_is_not_offered(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="ok"))
    await env.stream("hello")
    assert "tool_search" not in offered(env.llm.requests[-1]) and "get_current_time" in offered(env.llm.requests[-1])
