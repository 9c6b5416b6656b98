"""LLM Wiki page-type permissions: rules per agent and KB, enforced by wiki_search, wiki_read and wiki_write."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import make_agent, names
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, use_fake_wiki_models, wait_idle


async def setup(api: ApiClient, llm: ScriptedOpenAI) -> tuple[str, str]:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Astronomy")
    llm.enqueue(Script(text=pages_answer(
        page("saturn", "Saturn", "# Saturn\n\nSaturn has rings of ice.", ["c1"], "entity"),
        page("rings", "Rings", "# Rings\n\nPlanetary rings are ice and rock.", ["c1"], "concept"))))
    await add_text(api, kb, "Planets", "Saturn is a gas giant with rings made of ice and rock.")
    await wait_idle(api, kb)
    agent = await make_agent(api, primaryKbId=kb)
    r = await api.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["wiki_search", "wiki_read", "wiki_write"]},
                      token="alice")
    assert r.status == 200, r.body
    return kb, agent


def rules_url(kb: str, agent: str) -> str:
    return f"{KB}/{kb}/agents/{agent}/page-type-permissions"


async def call(api: ApiClient, llm: ScriptedOpenAI, agent: str, conv: str, tool: str, args: dict[str, Any]) -> list:
    llm.enqueue(Script(tool_calls=[ScriptedToolCall(tool, args, id=f"call_{conv}")]), Script(text="ok"))
    return await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": conv, "message": "go"},
                         token="alice")


def completed(events: list) -> dict[str, Any]:
    return next(e for e in events if e.event == "tool_call_completed").data


async def test_rules_are_stored_per_agent_kb_and_type_and_checked(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb, agent = await setup(api, llm)
    r = await api.post(rules_url(kb, agent), {"pageType": "entity", "read": "allow", "write": "deny"}, token="bob")
    assert r.status == 200 and r.data["write"] == "deny"
    again = await api.post(rules_url(kb, agent), {"pageType": "entity", "write": "approval_required"}, token="bob")
    assert again.data["id"] == r.data["id"] and again.data["write"] == "approval_required"
    listed = (await api.get(rules_url(kb, agent), token="carol")).data
    assert [(x["pageType"], x["read"], x["write"]) for x in listed] == [("entity", "allow", "approval_required")]
    bad = await api.post(rules_url(kb, agent), {"pageType": "nonsense"}, token="bob")
    assert bad.status == 404 and bad.msg.startswith("pageType: ")  # the KB's profile has no such type: nothing to name
    bad = await api.post(rules_url(kb, agent), {"pageType": "entity", "write": "maybe"}, token="bob")
    assert bad.status == 400 and bad.msg.startswith("write: ")
    assert (await api.post(rules_url(kb, agent), {"pageType": "entity"}, token="carol")).status == 403
    assert (await api.get(rules_url(kb, "12345"), token="bob")).status == 404
    ws = people["dave"]["workspace"]
    assert (await api.get(rules_url(kb, agent), token="dave", workspace=ws)).status == 404
    assert (await api.delete(f"{rules_url(kb, agent)}/{r.data['id']}", token="bob")).status == 200
    assert (await api.delete(f"{rules_url(kb, agent)}/{r.data['id']}", token="bob")).status == 404
    assert (await api.get(rules_url(kb, agent), token="bob")).data == []


async def test_a_deny_rule_stops_wiki_write_and_read_rules_hide_pages(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb, agent = await setup(api, llm)
    await api.post(rules_url(kb, agent), {"pageType": "entity", "read": "deny", "write": "deny"}, token="bob")
    done = completed(await call(api, llm, agent, "w1", "wiki_write",
                                {"slug": "saturn", "markdown": "# Saturn\n\nOverwritten."}))
    assert done["success"] is False and "denied" in done["result"]
    assert "Overwritten" not in (await api.get(f"{KB}/{kb}/pages/saturn", token="bob")).data["markdown"]
    done = completed(await call(api, llm, agent, "w2", "wiki_write",
                                {"title": "Titan", "pageType": "entity", "markdown": "# Titan\n\nA moon."}))
    assert done["success"] is False and (await api.get(f"{KB}/{kb}/pages/titan", token="bob")).status == 404
    done = completed(await call(api, llm, agent, "r1", "wiki_read", {"slug": "saturn"}))
    assert done["success"] is False and "denied" in done["result"]
    done = completed(await call(api, llm, agent, "s1", "wiki_search", {"query": "rings of ice"}))
    assert "slug: rings" in done["result"] and "slug: saturn" not in done["result"]
    # Other types stay writable and readable.
    done = completed(await call(api, llm, agent, "w3", "wiki_write",
                                {"title": "Ice", "pageType": "concept", "markdown": "# Ice\n\nFrozen water, see [[rings]]."}))
    assert done["success"] is True, done
    ice = (await api.get(f"{KB}/{kb}/pages/ice", token="bob")).data
    assert ice["origin"] == "agent" and ice["links"][0]["exists"] is True
    done = completed(await call(api, llm, agent, "r2", "wiki_read", {"slug": "ice"}))
    assert done["success"] is True and "Frozen water" in done["result"]


async def test_approval_required_pauses_wiki_write_until_approved(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb, agent = await setup(api, llm)
    await api.post(rules_url(kb, agent), {"pageType": "*", "write": "approval_required"}, token="bob")
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("wiki_write", {"slug": "saturn", "markdown": "# Saturn\n\nSixth planet."},
                                                    id="call_a")]), Script(text="Written."))
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "a1", "message": "go"},
                           token="alice")
    asked = next(e for e in events if e.event == "tool_approval_requested").data
    assert asked["toolName"] == "wiki_write" and "requires approval" in asked["reason"]
    assert events[-1].data["status"] == "awaiting_approval"
    assert "Sixth" not in (await api.get(f"{KB}/{kb}/pages/saturn", token="bob")).data["markdown"]
    resumed = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "a1", "message": "/approve"},
                            token="alice")
    assert "tool_approval_resolved" in names(resumed)
    assert completed(resumed)["success"] is True
    assert "Sixth planet" in (await api.get(f"{KB}/{kb}/pages/saturn", token="bob")).data["markdown"]
