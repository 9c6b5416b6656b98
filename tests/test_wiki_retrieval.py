"""An agent's knowledge at work: wiki tools beside the defaults, retrieval on every turn, citations,
and page-type permissions and the `wiki` flag applied to the digest and retrieval alike."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.wiki import KB, make_kb, page, pages_answer, use_fake_wiki_models, wait_idle
from tests.test_wiki_access import upload

DEFAULTS = {"get_current_time", "list_files", "read_file", "write_file", "web_fetch"}

NOTES = [
    ("kettle.md", "# Office kettle\n\nThe kettle sits in the second-floor kitchen.\n\n"
     "Descaling: the kettle is descaled with citric acid every three weeks, on Mondays, by Priya.\n",
     page("office-kettle", "Office kettle", "# Office kettle\n\nThe kettle sits in the second-floor kitchen.\n\n"
          "It is descaled with citric acid every three weeks, on Mondays, by Priya.", ["c1"], "entity")),
    ("plants.md", "# Plants\n\nThe ferns on the balcony are watered on Thursdays with rain water.\n",
     page("plants", "Plants", "# Plants\n\nThe ferns on the balcony are watered on Thursdays with rain water.", ["c1"])),
    ("bikes.md", "# Bikes\n\nThe bike shed code is changed each quarter; ask the front desk.\n",
     page("bikes", "Bikes", "# Bikes\n\nThe bike shed code is changed each quarter; ask the front desk.", ["c1"])),
]


async def notes_kb(api: ApiClient, llm: ScriptedOpenAI) -> str:
    """A knowledge base built from uploaded Markdown notes (one scripted page per note)."""
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Office")
    for name, text, written in NOTES:
        llm.enqueue(Script(text=pages_answer(written)))
        r = await upload(api, kb, name, text.encode())
        assert r.status == 200, r.body
        await wait_idle(api, kb)
    return kb


def offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


async def ask(api: ApiClient, llm: ScriptedOpenAI, agent: str, conv: str, message: str, answer: str = "ok") -> list:
    llm.enqueue(Script(text=answer))
    return await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": conv, "message": message},
                         token="alice")


async def test_an_agent_bound_to_a_kb_is_offered_the_wiki_tools_beside_the_defaults(api: ApiClient, people: dict,
                                                                                      llm: ScriptedOpenAI) -> None:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Office")
    agent = await make_agent(api, primaryKbId=kb)
    await ask(api, llm, agent, "t1", "hello")
    tools = offered(llm.requests[-1])
    assert DEFAULTS <= set(tools) and {"wiki_search", "wiki_read"} <= set(tools), tools
    # Bound through the KB's agent list (not the primary KB) as well.
    helper = await make_agent(api)
    assert (await api.put(f"{KB}/{kb}", {"agentIds": [helper]}, token="bob")).status == 200
    await ask(api, llm, helper, "t2", "hello")
    assert {"wiki_search", "wiki_read"} <= set(offered(llm.requests[-1]))
    # An agent without knowledge is offered the defaults only.
    plain = await make_agent(api)
    await ask(api, llm, plain, "t3", "hello")
    assert set(offered(llm.requests[-1])) == DEFAULTS


async def test_switching_wiki_search_on_keeps_the_default_tools(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    await use_fake_wiki_models(api, llm.url)
    agent = await make_agent(api)
    r = await api.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["wiki_search"]}, token="alice")
    assert r.status == 200, r.body
    await ask(api, llm, agent, "s1", "hello")
    assert set(offered(llm.requests[-1])) == DEFAULTS | {"wiki_search"}
    # Naming a default tool still means exactly the bound tools.
    r = await api.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["read_file", "wiki_search"]}, token="alice")
    assert r.status == 200, r.body
    await ask(api, llm, agent, "s2", "hello")
    assert offered(llm.requests[-1]) == ["read_file", "wiki_search"]
