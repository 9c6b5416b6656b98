"""LLM Wiki: materials become pages (scripted LLM, real local embeddings), search, links, rename, states."""
from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.openapi_inputs import conforms
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, wait_idle, wait_status

PHOTO = ("Photosynthesis is how plants turn sunlight, water and carbon dioxide into glucose and oxygen. "
         "It happens in the chloroplasts, which hold chlorophyll.")
CHLORO = "# Chlorophyll\n\nThe green pigment that absorbs light for [[photosynthesis]]."
PHOTO_MD = "# Photosynthesis\n\nPlants make glucose from light in [[Chlorophyll|chlorophyll]]-rich chloroplasts."


@pytest_asyncio.fixture
async def wiki(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> dict[str, Any]:
    """A KB with one processed material: pages `photosynthesis` and `chlorophyll` linking each other."""
    await use_fake_openai(api, llm.url)
    kb_id = await make_kb(api)
    llm.enqueue(Script(text=pages_answer(
        page("photosynthesis", "Photosynthesis", PHOTO_MD, ["c1"], "concept"),
        page("chlorophyll", "Chlorophyll", CHLORO, ["c1"], "entity"),
    )))
    raw = await add_text(api, kb_id, "Plant biology", PHOTO)
    await wait_idle(api, kb_id)
    return {"kb": kb_id, "raw": raw["id"]}


async def test_a_text_material_is_processed_into_linked_cited_pages(api: ApiClient, llm: ScriptedOpenAI, wiki: dict) -> None:
    kb, raw_id = wiki["kb"], wiki["raw"]
    prompt = llm.requests[-1]["messages"][-1]["content"]
    assert "[c1]" in prompt and "chloroplasts" in prompt and "Plant biology" in prompt
    raws = (await api.get(f"{KB}/{kb}/raw", token="carol")).data
    assert [(r["id"], r["status"], r["pageCount"], r["chunkCount"]) for r in raws] == [(raw_id, "completed", 2, 1)]
    listed = (await api.get(f"{KB}/{kb}/pages", params={"page": "1"}, token="carol")).data
    assert listed["total"] == 2 and [p["slug"] for p in listed["records"]] == ["chlorophyll", "photosynthesis"]
    p = (await api.get(f"{KB}/{kb}/pages/photosynthesis", token="carol")).data
    assert p["markdown"] == PHOTO_MD and p["pageType"] == "concept" and p["archived"] == 0
    assert p["links"] == [{"target": "Chlorophyll", "slug": "chlorophyll", "title": "Chlorophyll", "exists": True, "archived": 0}]
    assert p["rawIds"] == [raw_id] and p["citationCount"] == 1 and p["backlinkCount"] == 1
    cites = (await api.get(f"/api/v1/wiki/kb/{kb}/pages/{p['id']}/citations", token="carol")).data
    assert len(cites) == 1 and cites[0]["rawId"] == raw_id and cites[0]["text"] == PHOTO
    by_chunk = (await api.get(f"/api/v1/wiki/chunks/{cites[0]['chunkId']}/pages", token="carol")).data
    assert sorted(x["slug"] for x in by_chunk) == ["chlorophyll", "photosynthesis"]
    by_raw = (await api.get(f"/api/v1/wiki/raw/{raw_id}/pages", token="carol")).data
    assert len(by_raw) == 2
    filtered = (await api.get(f"{KB}/{kb}/pages", params={"rawId": "1", "page": "1"}, token="carol")).data
    assert filtered["total"] == 0
    back = (await api.get(f"{KB}/{kb}/pages/chlorophyll/backlinks", token="carol")).data
    assert [b["slug"] for b in back] == ["photosynthesis"]
    jobs = (await api.get(f"/api/v1/wiki/kb/{kb}/jobs", token="carol")).data
    assert jobs[0]["status"] == "completed" and jobs[0]["pagesWritten"] == 2
    assert [s["step"] for s in jobs[0]["steps"] if s["status"] == "completed"] == ["extract", "chunk", "embed", "generate"]
    stats = (await api.get(f"/api/v1/wiki/kb/{kb}/stats", token="carol")).data
    assert stats["pageCount"] == 2 and stats["linkCount"] == 2 and stats["brokenLinkCount"] == 0
    assert stats["rawByStatus"]["completed"] == 1 and stats["pageTypes"] == {"concept": 1, "entity": 1}
    status = (await api.get(f"{KB}/{kb}/processing-status", token="carol")).data
    assert status["idle"] is True and status["counts"]["completed"] == 1


async def test_search_preview_ranks_pages_by_keyword_and_vector_scores(api: ApiClient, wiki: dict) -> None:
    r = await api.post(f"/api/v1/wiki/kb/{wiki['kb']}/search-preview", {"query": "green pigment", "topK": 5}, token="carol")
    assert r.status == 200 and r.data["vectorSearch"] is True
    top = r.data["results"][0]
    assert top["slug"] == "chlorophyll" and top["keywordScore"] > 0 and top["vectorScore"] > 0
    assert top["score"] == pytest.approx(0.5 * top["keywordScore"] + 0.5 * top["vectorScore"], abs=1e-3)
    assert r.data["chunks"] and r.data["chunks"][0]["rawTitle"] == "Plant biology"
    r = await api.post(f"/api/v1/wiki/kb/{wiki['kb']}/search-preview", {"query": "", "topK": 5}, token="carol")
    assert r.status == 400 and r.msg.startswith("query: ")


async def test_rename_rewrites_every_referrer_and_keeps_labels(api: ApiClient, wiki: dict) -> None:
    kb = wiki["kb"]
    r = await api.post(f"{KB}/{kb}/pages/chlorophyll/rename", {"newSlug": "chlorophyll-a", "newTitle": "Chlorophyll A"}, token="bob")
    assert r.status == 200 and r.data["slug"] == "chlorophyll-a" and r.data["updatedReferrers"] == ["photosynthesis"]
    ref = (await api.get(f"{KB}/{kb}/pages/photosynthesis", token="bob")).data
    assert "[[chlorophyll-a|chlorophyll]]" in ref["markdown"] and ref["links"][0]["exists"] is True
    assert (await api.get(f"{KB}/{kb}/pages/chlorophyll", token="bob")).status == 404
    back = (await api.get(f"{KB}/{kb}/pages/chlorophyll-a/backlinks", token="bob")).data
    assert [b["slug"] for b in back] == ["photosynthesis"]
    clash = await api.post(f"{KB}/{kb}/pages/photosynthesis/rename", {"newSlug": "chlorophyll-a"}, token="bob")
    assert clash.status == 409 and "already exists" in clash.msg  # a slug taken: stored state, not the body
    doc = (await api.get("/v3/api-docs")).body
    for body in ({"newSlug": "\u000b"}, {"newTitle": "!!"}, {"newSlug": "--", "newTitle": "Fine"}):  # seed 101's newSlug
        r = await api.post(f"{KB}/{kb}/pages/photosynthesis/rename", body, token="bob")
        assert r.status == 422 and conforms(doc, "RenameRequest", body), (body, r.body)  # a rule 3.0 cannot state
    assert "422" in doc["paths"]["/api/v1/wiki/knowledge-bases/{kbId}/pages/{slug}/rename"]["post"]["responses"]
    found = (await api.get("/api/v1/wiki/pages/lookup", params={"title": "chlorophyll a"}, token="carol")).data
    assert [f["slug"] for f in found] == ["chlorophyll-a"] and found[0]["kbName"] == "Notes"


async def test_archive_and_unarchive_move_a_page_between_lists(api: ApiClient, wiki: dict) -> None:
    kb = wiki["kb"]
    r = await api.post(f"{KB}/{kb}/pages/chlorophyll/archive", token="bob")
    assert r.status == 200 and r.data["archived"] == 1
    assert [p["slug"] for p in (await api.get(f"{KB}/{kb}/pages", params={"size": "100"}, token="bob")).data["records"]] == ["photosynthesis"]
    archived = (await api.get(f"{KB}/{kb}/pages/archived", token="bob")).data
    assert [p["slug"] for p in archived] == ["chlorophyll"] and "markdown" not in archived[0]
    refs = (await api.get(f"{KB}/{kb}/pages/refs", token="bob")).data
    assert {"slug": "chlorophyll", "title": "Chlorophyll", "archived": 1} in refs
    hits = (await api.post(f"/api/v1/wiki/kb/{kb}/search-preview", {"query": "green pigment"}, token="bob")).data
    assert "chlorophyll" not in [h["slug"] for h in hits["results"]]
    r = await api.post(f"{KB}/{kb}/pages/chlorophyll/unarchive", token="bob")
    assert r.data["archived"] == 0 and (await api.get(f"{KB}/{kb}/pages/archived", token="bob")).data == []


async def test_a_manual_edit_recomputes_links_and_deletes_are_scoped(api: ApiClient, wiki: dict) -> None:
    kb = wiki["kb"]
    r = await api.put(f"{KB}/{kb}/pages/chlorophyll", {"markdown": "Now about [[Leaf]] and [[stomata]]."}, token="bob")
    assert r.status == 200 and r.data["origin"] == "manual" and r.data["version"] == 2
    assert [(x["slug"], x["exists"]) for x in r.data["links"]] == [("leaf", False), ("stomata", False)]
    assert (await api.get(f"/api/v1/wiki/kb/{kb}/stats", token="bob")).data["brokenLinkCount"] == 2
    assert (await api.get(f"{KB}/{kb}/pages/photosynthesis/backlinks", token="bob")).data == []
    bad = await api.put(f"{KB}/{kb}/pages/chlorophyll", {"markdown": "x", "pageType": "nonsense"}, token="bob")
    assert bad.status == 400 and bad.msg.startswith("pageType: ")
    related = (await api.get(f"/api/v1/wiki/kb/{kb}/pages/photosynthesis/related", token="bob")).data
    assert related and related[0]["slug"] == "chlorophyll"
    assert related[0]["relation"] == "links_to" and isinstance(related[0]["pageType"], str)  # the link resolver reads it too
    zero = await api.get(f"/api/v1/wiki/kb/{kb}/pages/photosynthesis/related", params={"limit": "0"}, token="bob")
    assert zero.status == 400 and zero.msg.startswith("limit: ")  # out of the documented 1-50, not the default
    blank = await api.delete(f"{KB}/{kb}/pages/batch", {"slugs": ["", ""]}, token="bob")
    assert blank.status == 400 and blank.msg.startswith("slugs"), blank.body  # refused, not dropped to nothing
    r = await api.delete(f"{KB}/{kb}/pages/batch", {"slugs": ["chlorophyll", "nope"]}, token="bob")
    assert r.data == {"deleted": 1}
    assert (await api.delete(f"{KB}/{kb}/pages/photosynthesis", token="bob")).status == 200
    assert (await api.get(f"{KB}/{kb}/pages", params={"page": "1"}, token="bob")).data["total"] == 0


async def test_reprocessing_unchanged_content_is_skipped_unless_forced(api: ApiClient, llm: ScriptedOpenAI, wiki: dict) -> None:
    kb, raw_id = wiki["kb"], wiki["raw"]
    calls = len(llm.requests)
    r = await api.post(f"{KB}/{kb}/raw/{raw_id}/reprocess", token="bob")
    assert r.status == 200 and r.data["status"] == "pending"
    await wait_idle(api, kb)
    jobs = (await api.get(f"/api/v1/wiki/kb/{kb}/jobs", params={"rawId": raw_id}, token="bob")).data
    assert jobs[0]["status"] == "skipped" and len(llm.requests) == calls
    llm.enqueue(Script(text=pages_answer(page("photosynthesis", "Photosynthesis", "# Photosynthesis v2", ["c1"]))))
    r = await api.post(f"{KB}/{kb}/raw/{raw_id}/reprocess", params={"force": "true"}, token="bob")
    await wait_idle(api, kb)
    assert len(llm.requests) > calls
    p = (await api.get(f"{KB}/{kb}/pages/photosynthesis", token="bob")).data
    assert p["markdown"] == "# Photosynthesis v2" and p["version"] == 2
    r = await api.post(f"{KB}/{kb}/process", params={"force": "true"}, token="bob")
    assert r.status == 200 and r.data["queued"] == 1
    await wait_idle(api, kb)  # the fake echoes: no JSON, so that run fails
    raws = (await api.get(f"{KB}/{kb}/raw", token="bob")).data
    assert raws[0]["status"] == "failed" and "JSON" in raws[0]["error"]


async def test_cancel_is_valid_only_while_processing(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    await use_fake_openai(api, llm.url)
    kb = await make_kb(api, autoProcess=False)
    raw = await add_text(api, kb, "Slow", "Some text about slow things.")
    assert raw["status"] == "pending"
    r = await api.post(f"{KB}/{kb}/raw/{raw['id']}/cancel", token="bob")
    assert r.status == 409 and "only while processing" in r.msg and "pending" in r.msg
    llm.enqueue(Script(hang=True))
    assert (await api.post(f"{KB}/{kb}/process", token="bob")).data["queued"] == 1
    await wait_status(api, kb, raw["id"], "processing", "generate")
    assert (await api.post(f"{KB}/{kb}/raw/{raw['id']}/cancel", token="carol")).status == 403
    r = await api.post(f"{KB}/{kb}/raw/{raw['id']}/cancel", token="bob")
    assert r.status == 200 and r.data["status"] == "cancelled"
    await wait_idle(api, kb)
    jobs = (await api.get(f"/api/v1/wiki/kb/{kb}/jobs", token="bob")).data
    assert jobs[0]["status"] == "cancelled"
    again = await api.post(f"{KB}/{kb}/raw/{raw['id']}/cancel", token="bob")
    assert again.status == 409 and "cancelled" in again.msg


async def test_processing_left_unfinished_resumes_after_a_restart(server: RunningServer, api: ApiClient, people: dict,
                                                                 llm: ScriptedOpenAI) -> None:
    from platform_server.features.wiki.engine import WikiEngine
    from platform_server.features.models import LLM
    from platform_server.features.wiki import WIKI
    from platform_server.features.wiki.models import RawMaterial

    await use_fake_openai(api, llm.url)
    kb = await make_kb(api, autoProcess=False)
    raw = await add_text(api, kb, "Resume me", "Resumable knowledge about tides.")
    waiting = await add_text(api, kb, "Waiting", "Queued knowledge about the moon.")
    await server.platform.services.wiki.stop()  # as if the process stopped mid-run, with one more material queued
    RawMaterial.update(status="processing", queued=True).where(RawMaterial.id == int(raw["id"])).execute()
    RawMaterial.update(queued=True).where(RawMaterial.id == int(waiting["id"])).execute()
    llm.enqueue(Script(text=pages_answer(page("tides", "Tides", "# Tides"))), Script(text=pages_answer(page("moon", "Moon", "# Moon"))))
    platform = server.platform
    engine = WikiEngine(platform.runtime(LLM), platform.config, platform.storage)
    # one process: its workers wake on its own queueing only, no timer; with Redis (several may run) they also look every 3 s
    assert engine.poll_s == (3.0 if platform.config.redis_url else None)
    platform.set_runtime(WIKI, engine)
    engine.start()
    await wait_idle(api, kb)
    raws = (await api.get(f"{KB}/{kb}/raw", token="bob")).data
    assert [(r["title"], r["status"], r["pageCount"]) for r in raws] == [("Waiting", "completed", 1), ("Resume me", "completed", 1)]


async def test_a_page_type_profile_steers_generation_and_edits(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    await use_fake_openai(api, llm.url)
    kb = await make_kb(api)
    builtin = (await api.get(f"{KB}/{kb}/page-type-profile", token="carol")).data
    assert builtin["builtin"] is True and builtin["defaultType"] == "concept"
    custom = {"defaultType": "note", "pageTypes": [{"name": "note", "description": "A plain note"}, {"name": "person"}]}
    bad = {"defaultType": "note", "pageTypes": [{"name": "Note"}]}
    r = await api.post(f"{KB}/{kb}/page-type-profile/validate", bad, token="carol")
    assert r.data["valid"] is False and r.data["error"].startswith("pageTypes.0.name: must be lower-case letters")
    # seed 101: the check's body is any object (its answer says what PUT would refuse), so a profile that breaks the
    # saved profile's schema is a 200 `valid: false` the document allows, and only a body that is no object a 400
    doc = (await api.get("/v3/api-docs")).body
    assert conforms(doc, "ProfileDraft", {"defaultType": "", "pageTypes": []}) and not conforms(doc, "ProfileDraft", [1])
    r = await api.post(f"{KB}/{kb}/page-type-profile/validate", {"defaultType": ""}, token="carol")
    assert r.status == 200 and r.data["valid"] is False, r.body
    assert (await api.post(f"{KB}/{kb}/page-type-profile/validate", [1], token="carol")).status == 400
    # the rules between values read the forgiving way the document states: a default not listed joins the types,
    # a type listed twice counts once
    loose = {"defaultType": "x", "pageTypes": [{"name": "note", "description": "first"}, {"name": "note"}]}
    r = await api.put(f"{KB}/{kb}/page-type-profile", loose, token="bob")
    assert r.status == 200 and r.data["pageTypes"] == [{"name": "note", "description": "first"}, {"name": "x", "description": ""}], r.data
    assert (await api.post(f"{KB}/{kb}/page-type-profile/validate", custom, token="carol")).data["valid"] is True
    assert (await api.put(f"{KB}/{kb}/page-type-profile", bad, token="bob")).status == 400
    r = await api.put(f"{KB}/{kb}/page-type-profile", custom, token="bob")
    assert r.status == 200 and r.data["builtin"] is False and [t["name"] for t in r.data["pageTypes"]] == ["note", "person"]
    llm.enqueue(Script(text=pages_answer(page("ada", "Ada", "# Ada\n\nSee [[nowhere]].", ["c1"], "person"),
                                         page("misc", "Misc", "# Misc", ["c9"], "entity"))))
    await add_text(api, kb, "People", "Ada Lovelace wrote the first program.")
    await wait_idle(api, kb)
    assert "person (" not in llm.requests[-1]["messages"][0]["content"]
    assert "note (A plain note); person" in llm.requests[-1]["messages"][0]["content"]
    types = {p["slug"]: p["pageType"] for p in (await api.get(f"{KB}/{kb}/pages", params={"size": "100"}, token="bob")).data["records"]}
    assert types == {"ada": "person", "misc": "note"}  # unknown types fall back to the default
    r = await api.put(f"{KB}/{kb}/pages/ada", {"markdown": "x", "pageType": "concept"}, token="bob")
    assert r.status == 400 and r.msg == "pageType: must be one of note, person"
    r = await api.post(f"{KB}/{kb}/page-type-profile/reset-default", token="bob")
    assert r.data["builtin"] is True
    # broken-link lint runs as a job; its latest result is the aggregate
    assert (await api.get(f"{KB}/{kb}/lint/broken-links", token="carol")).data["jobId"] is None
    r = await api.post(f"{KB}/{kb}/lint/broken-links", token="bob")
    assert r.status == 200 and r.data["status"] == "running"

    async def ended() -> Any:
        job = (await api.get(f"{KB}/{kb}/lint/broken-links/jobs/{r.data['jobId']}", token="carol")).data
        return job["status"] != "running" and job

    job = await eventually(ended, what="the lint job ended")
    assert job["status"] == "completed" and job["result"]["brokenCount"] == 1
    agg = (await api.get(f"{KB}/{kb}/lint/broken-links", token="carol")).data
    assert agg["jobId"] == r.data["jobId"] and agg["result"]["byTarget"] == [
        {"targetSlug": "nowhere", "target": "nowhere", "count": 1, "pages": ["ada"]}]
    assert (await api.get("/api/v1/wiki/admin/failures", token="bob")).status == 403
    assert (await api.get("/api/v1/wiki/admin/failures", token="alice")).data == []


async def test_a_page_lookup_naming_neither_title_nor_slug_finds_no_page(api: ApiClient, people: dict) -> None:
    """OpenAPI 3.0 cannot state "one of two query parameters": neither is required, and naming none matches none."""
    for params in ({}, {"title": ""}, {"slug": "", "title": ""}):
        r = await api.get("/api/v1/wiki/pages/lookup", params=params, token="carol")
        assert r.status == 200 and r.data == [], (params, r.body)
