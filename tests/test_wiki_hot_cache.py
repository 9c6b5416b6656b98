"""LLM Wiki hot cache: a bounded digest of most-linked and recent pages, in the prompts of the KB's agents."""
from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.wiki import add_text, make_kb, page, pages_answer, use_fake_wiki_models, wait_idle

HC = "/api/v1/wiki/hot-cache"


async def ready(api: ApiClient, kb: str) -> dict[str, Any]:
    async def built() -> Any:
        r = await api.get(f"{HC}/{kb}", token="carol")
        assert r.status == 200 and r.data["status"] == "ready", f"hot cache not ready: {r.body}"
        return r.data

    return await eventually(built)


async def build(api: ApiClient, llm: ScriptedOpenAI) -> str:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Astronomy")
    llm.enqueue(Script(text=pages_answer(
        page("saturn", "Saturn", "# Saturn\n\nSaturn is the ringed planet. It has [[rings]] and [[titan]].", ["c1"]),
        page("rings", "Rings", "# Rings\n\nRings are made of ice. See [[titan]].", ["c1"]),
        page("titan", "Titan", "# Titan\n\nTitan is Saturn's largest moon.", ["c1"]))))
    await add_text(api, kb, "Planets", "Saturn, its rings and Titan.")
    await wait_idle(api, kb)
    return kb


async def test_the_digest_lists_most_linked_pages_first_and_reaches_the_agents_prompt(api: ApiClient, people: dict,
                                                                                     llm: ScriptedOpenAI) -> None:
    kb = await build(api, llm)
    cache = await ready(api, kb)  # built by itself when processing went idle
    lines = cache["content"].splitlines()
    assert lines[0] == "## Knowledge base: Astronomy"
    assert lines[2].startswith("- [[titan]] Titan (most linked, 2 links): Titan is Saturn's largest moon.")
    assert cache["pages"][:2] == ["titan", "rings"] and set(cache["pages"]) == {"titan", "rings", "saturn"}
    assert 0 < cache["tokenCount"] <= 600
    agent = await make_agent(api, primaryKbId=kb)
    other = await make_agent(api)
    llm.enqueue(Script(text="ok"), Script(text="ok"))
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "h1", "message": "hi"}, token="alice")
    assert "[[titan]] Titan" in llm.requests[-1]["messages"][0]["content"]
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": other, "conversationId": "h2", "message": "hi"}, token="alice")
    assert "[[titan]]" not in str(llm.requests[-1]["messages"])
    # the original console's Feature Flags page switches the digest out of prompts (global admin) and back
    r = await api.put("/api/v1/feature-flags/wiki.hot_cache.enabled", {"enabled": False}, token="alice")
    assert r.status == 200 and r.data["flagKey"] == "wiki.hot_cache.enabled" and r.data["enabled"] is False
    llm.enqueue(Script(text="ok"))
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "h1b", "message": "hi"}, token="alice")
    assert "[[titan]]" not in str(llm.requests[-1]["messages"])
    assert (await api.put("/api/v1/feature-flags/wiki.hot_cache.enabled", {"enabled": True}, token="alice")).status == 200
    llm.enqueue(Script(text="ok"))
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "h1c", "message": "hi"}, token="alice")
    assert "[[titan]] Titan" in llm.requests[-1]["messages"][0]["content"]
    # Soft delete: gone from GET and from prompts; regenerate brings it back.
    assert (await api.delete(f"{HC}/{kb}", token="bob")).status == 200
    assert (await api.get(f"{HC}/{kb}", token="bob")).status == 404
    llm.enqueue(Script(text="ok"))
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "h3", "message": "hi"}, token="alice")
    assert "[[titan]]" not in str(llm.requests[-1]["messages"])
    r = await api.post(f"{HC}/{kb}/regenerate", token="bob")
    assert r.status == 200 and r.data["status"] in ("pending", "ready")
    assert (await ready(api, kb))["pages"][0] == "titan"
    assert (await api.post(f"{HC}/{kb}/regenerate", token="carol")).status == 403
    ws = people["dave"]["workspace"]
    assert (await api.get(f"{HC}/{kb}", token="dave", workspace=ws)).status == 404


@pytest.mark.config(wiki_hot_cache_max_tokens=40)
async def test_the_digest_is_bounded_in_tokens(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb = await build(api, llm)
    cache = await ready(api, kb)
    assert cache["tokenCount"] <= 40 and len(cache["content"]) <= 160 and len(cache["pages"]) == 1
