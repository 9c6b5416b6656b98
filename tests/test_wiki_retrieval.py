"""An agent's knowledge at work: wiki tools beside the defaults, retrieval on every turn, citations,
and page-type permissions and the `wiki` flag applied to the digest and retrieval alike."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, make_kb, page, pages_answer, restart, use_fake_wiki_models, wait_idle
from tests.test_wiki_access import upload
from tests.test_wiki_hot_cache import ready

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


def system_of(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def citations_of(events: list) -> list[dict[str, Any]]:
    return [c for e in events if e.event == "citations" for c in e.data["citations"]]


async def test_the_passage_that_answers_reaches_the_request_and_its_citation_streams_and_is_stored(
        api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb = await notes_kb(api, llm)
    await ready(api, kb)
    agent = await make_agent(api, primaryKbId=kb)
    events = await ask(api, llm, agent, "k1", "How often is the kettle descaled?", "Every three weeks [1].")
    system = system_of(llm.requests[-1])
    assert "descaled with citric acid every three weeks" in system, system
    assert "[1] " in system and "## From the knowledge bases" in system
    cited = citations_of(events)
    kettle = next(c for c in cited if "three weeks" in c["snippet"])
    assert kettle["kbId"] == kb and kettle["kbName"] == "Office" and kettle["url"].startswith(f"#/wiki/{kb}")
    assert f"[{kettle['id']}] {kettle['title']}" in system
    if kettle["kind"] == "page":
        assert kettle["slug"] == "office-kettle" and kettle["url"] == f"#/wiki/{kb}/page/office-kettle"
        assert (await api.get(kettle["apiPath"], token="carol")).status == 200
    names = [e.event for e in events]
    assert names.index("message_start") < names.index("citations") < names.index("content_delta")
    messages = (await api.get("/api/v1/conversations/k1/messages", token="alice")).data
    stored = next(m for m in messages if m["role"] == "assistant")
    assert [{k: v for k, v in c.items() if k != "cited"} for c in stored["metadata"]["citations"]] == cited
    assert [c["cited"] for c in stored["metadata"]["citations"]] == [c["id"] == 1 for c in cited]  # "Every three weeks [1]."
    # Unrelated notes are ranked below the answer.
    assert cited[0]["snippet"] == kettle["snippet"]


async def test_a_page_type_denied_to_the_agent_never_reaches_its_request(api: ApiClient, people: dict,
                                                                          llm: ScriptedOpenAI) -> None:
    kb = await notes_kb(api, llm)
    cache = await ready(api, kb)
    assert "office-kettle" in cache["pages"]
    agent = await make_agent(api, primaryKbId=kb)
    r = await api.post(f"{KB}/{kb}/agents/{agent}/page-type-permissions", {"pageType": "entity", "read": "deny"},
                       token="bob")
    assert r.status == 200, r.body
    events = await ask(api, llm, agent, "d1", "How often is the office kettle descaled with citric acid?")
    sent = str(llm.requests[-1]["messages"])
    for secret in ("Office kettle", "second-floor kitchen", "citric acid every", "office-kettle"):
        assert secret not in sent.replace("How often is the office kettle descaled with citric acid?", ""), secret
    assert all("kettle" not in c["title"].lower() for c in citations_of(events))
    # Pages of other types still reach it, through the digest and retrieval.
    events = await ask(api, llm, agent, "d2", "When are the balcony ferns watered?")
    assert "watered on Thursdays with rain water" in system_of(llm.requests[-1])
    assert any("Thursdays" in c["snippet"] for c in citations_of(events))


async def test_the_wiki_flag_off_removes_the_digest_the_retrieval_and_the_wiki_tools(api: ApiClient, people: dict,
                                                                                      llm: ScriptedOpenAI) -> None:
    kb = await notes_kb(api, llm)
    await ready(api, kb)
    agent = await make_agent(api, primaryKbId=kb)
    assert (await api.put("/api/v1/feature-flags/wiki", {"enabled": False}, token="alice")).status == 200
    events = await ask(api, llm, agent, "f1", "How often is the kettle descaled?")
    request = llm.requests[-1]
    assert "Knowledge base: Office" not in system_of(request) and "citric acid" not in system_of(request)
    assert not citations_of(events) and not {"wiki_search", "wiki_read"} & set(offered(request))
    assert DEFAULTS <= set(offered(request))


async def test_the_retrieval_budget_bounds_the_passages_and_zero_turns_retrieval_off(
        api: ApiClient, people: dict, llm: ScriptedOpenAI, server: RunningServer) -> None:
    kb = await notes_kb(api, llm)
    await ready(api, kb)
    agent = await make_agent(api, primaryKbId=kb)
    await ask(api, llm, agent, "b1", "kettle descaled ferns watered bike shed code")
    assert system_of(llm.requests[-1]).count("\n[") >= 2  # several passages within the default budget
    again = await restart(server, wiki_retrieval_max_tokens=0)
    events = await ask(again.client, llm, agent, "b2", "How often is the kettle descaled?")
    system = system_of(llm.requests[-1])
    assert "## From the knowledge bases" not in system and not citations_of(events)
    assert "Knowledge base: Office" in system  # the digest stays


async def test_a_delegated_agent_with_knowledge_gets_the_passages_for_its_task(api: ApiClient, people: dict,
                                                                               llm: ScriptedOpenAI) -> None:
    kb = await notes_kb(api, llm)
    lead = await make_agent(api, name="Lead")
    assert (await api.put(f"/api/v1/agents/{lead}/tools", {"toolNames": ["delegate_to_agent"]}, token="alice")).status == 200
    await make_agent(api, name="Librarian", primaryKbId=kb)
    task = "How often is the kettle descaled?"
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("delegate_to_agent", {"agentName": "Librarian", "task": task})]),
                Script(text="Every three weeks."), Script(text="Every three weeks, says the librarian."))
    await api.sse("POST", "/api/v1/chat/stream", {"agentId": lead, "conversationId": "sub1", "message": task}, token="alice")
    sub = next(r for r in llm.requests if r.get("messages") and r["messages"][-1].get("content") == task
               and "descaled with citric acid every three weeks" in str(r["messages"][0]["content"]))
    assert "[1] " in sub["messages"][0]["content"]


async def test_a_failing_retrieval_leaves_the_answer_without_passages_rather_than_failing_it(
        api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    from platform_server.db import database

    kb = await notes_kb(api, llm)
    agent = await make_agent(api, primaryKbId=kb)
    database.execute_sql("DROP TABLE wiki_page_fts")  # a broken search index
    events = await ask(api, llm, agent, "x1", "How often is the kettle descaled?", "I do not know.")
    assert events[-1].event == "done" and events[-1].data["status"] == "completed"
    assert not citations_of(events) and "## From the knowledge bases" not in system_of(llm.requests[-1])


async def test_the_synchronous_chat_answer_carries_its_citations(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb = await notes_kb(api, llm)
    agent = await make_agent(api, primaryKbId=kb)
    llm.enqueue(Script(text="Every three weeks [1]."))
    r = await api.post("/api/v1/chat", {"agentId": agent, "conversationId": "y1", "message": "How often is the kettle descaled?"},
                       token="alice")
    assert r.status == 200, r.body
    assert any("three weeks" in c["snippet"] for c in r.data["citations"]) and r.data["citations"][0]["cited"] is True


async def test_an_agent_bound_to_a_linked_notes_folder_gets_the_answering_note_and_its_citation(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text, _ in NOTES:
        (notes / name).write_text(text)
    server = await restart(server, wiki_source_roots=f"1:{tmp_path}")
    api = server.client
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Office")
    for i in range(len(NOTES)):  # one page per note, whichever note is read first
        llm.enqueue(Script(text=pages_answer(page(f"note-{i}", f"Note {i}", f"# Note {i}\n\nA note.", ["c1"]))))
    assert (await api.put(f"{KB}/{kb}/source-directory", {"path": "notes", "watch": False}, token="bob")).status == 200

    async def processed() -> bool:  # the link scans the folder; each note is then processed
        rows = (await api.get(f"{KB}/{kb}/raw", token="bob")).data
        assert [r["status"] for r in rows] == ["completed"] * len(NOTES), rows
        return True

    await eventually(processed)
    agent = await make_agent(api, primaryKbId=kb)
    events = await ask(api, llm, agent, "n1", "How often is the kettle descaled?")
    assert "descaled with citric acid every three weeks" in system_of(llm.requests[-1])
    kettle = next(c for c in citations_of(events) if "three weeks" in c["snippet"])
    assert kettle["kind"] == "material" and kettle["title"] == "kettle" and kettle["url"] == f"#/wiki/{kb}"
