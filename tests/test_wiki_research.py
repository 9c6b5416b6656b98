"""LLM Wiki deep research: planned queries, searches in rounds, findings and a cited report over SSE."""
from __future__ import annotations

import json

from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, use_fake_wiki_models, wait_idle

START = "/api/v1/wiki/research/start"


async def planets_kb(api: ApiClient, llm: ScriptedOpenAI) -> str:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Astronomy")
    llm.enqueue(Script(text=pages_answer(
        page("saturn", "Saturn", "# Saturn\n\nSaturn has rings of ice, see [[rings]].", ["c1"], "entity"),
        page("rings", "Rings", "# Rings\n\nPlanetary rings are ice and rock.", ["c1"], "concept"))))
    await add_text(api, kb, "Planets", "Saturn is a gas giant with rings made of ice and rock.")
    await wait_idle(api, kb)
    return kb


async def test_research_streams_plan_search_findings_and_a_report_citing_pages(api: ApiClient, people: dict,
                                                                              llm: ScriptedOpenAI) -> None:
    kb = await planets_kb(api, llm)
    llm.enqueue(Script(text=json.dumps({"queries": ["saturn rings ice"]})),
                Script(text=json.dumps({"findings": [{"text": "Saturn's rings are ice and rock", "sources": ["p1", "c1"]}],
                                        "nextQueries": []})),
                Script(text="# What are Saturn's rings?\n\nThey are ice and rock [[saturn]] [c1]."))
    r = await api.post(START, {"kbId": kb, "question": "What are Saturn's rings made of?", "saveAsPage": True},
                       token="bob")
    assert r.status == 200, r.body
    sid = r.data["sessionId"]
    events = await api.sse("GET", f"/api/v1/wiki/research/stream/{sid}", token="bob", timeout=30)
    assert [e.event for e in events] == ["plan", "search", "finding", "report", "done"]
    assert events[0].data["queries"] == ["saturn rings ice"]
    assert {p["slug"] for p in events[1].data["pages"]} >= {"saturn"} and events[1].data["chunks"]
    assert events[2].data["text"] == "Saturn's rings are ice and rock"
    report = events[3].data
    assert "[[saturn]]" in report["markdown"] and report["pages"] == [{"slug": "saturn", "title": "Saturn"}]
    assert report["chunks"][0]["rawTitle"] == "Planets" and report["chunks"][0]["label"] == "c1"
    slug = events[4].data["pageSlug"]
    assert slug and slug == report["pageSlug"]
    saved = (await api.get(f"{KB}/{kb}/pages/{slug}", token="bob")).data
    assert saved["pageType"] == "synthesis" and saved["citationCount"] == 1 and saved["links"][0]["slug"] == "saturn"
    prompt = llm.requests[-1]["messages"][-1]["content"]
    assert "Saturn's rings are ice and rock" in prompt and "[c1]" in prompt
    # A late subscriber replays the whole session; another user sees nothing.
    again = await api.sse("GET", f"/api/v1/wiki/research/stream/{sid}", token="bob", timeout=10)
    assert [e.event for e in again] == ["plan", "search", "finding", "report", "done"]
    for token, path in (("alice", sid), ("bob", "12345")):
        refused = await api.sse("GET", f"/api/v1/wiki/research/stream/{path}", token=token, timeout=10)
        assert [(e.event, e.data["code"]) for e in refused] == [("error", 404)]


async def test_research_refuses_bad_input_and_reports_a_failing_model(api: ApiClient, people: dict,
                                                                     llm: ScriptedOpenAI) -> None:
    kb = await planets_kb(api, llm)
    assert (await api.post(START, {"kbId": kb, "question": "?"}, token="bob")).status == 400
    assert (await api.post(START, {"kbId": "1", "question": "What is Saturn?"}, token="bob")).status == 404
    ws = people["dave"]["workspace"]
    assert (await api.post(START, {"kbId": kb, "question": "What is Saturn?"}, token="dave", workspace=ws)).status == 404
    r = await api.post(START, {"kbId": kb, "question": "What is Saturn?", "saveAsPage": True}, token="carol")
    assert r.status == 403
    llm.enqueue(Script(error_status=400, error_message="model refused"))
    r = await api.post(START, {"kbId": kb, "question": "What is Saturn?"}, token="carol")
    assert r.status == 200
    events = await api.sse("GET", f"/api/v1/wiki/research/stream/{r.data['sessionId']}", token="carol", timeout=30)
    assert [e.event for e in events] == ["error"] and events[0].data["message"]
    # The viewer reads what failed and an error id, not the provider's address or its answer.
    assert events[0].data["message"].startswith("The model provider rejected the request. (error ")
    assert "model refused" not in events[0].data["message"] and llm.url.split("//")[1] not in events[0].data["message"]
    pages = (await api.get(f"{KB}/{kb}/pages", params={"page": "1"}, token="bob")).data
    assert pages["total"] == 2
