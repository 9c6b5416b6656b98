"""LLM Wiki maintenance: relations between pages, enrich and repair keep links and citations, admin batches."""
from __future__ import annotations

from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, use_fake_wiki_models, wait_idle

P = "/api/v1/wiki/kb"


async def build(api: ApiClient, llm: ScriptedOpenAI) -> str:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Astronomy")
    llm.enqueue(Script(text=pages_answer(
        page("saturn", "Saturn", "# Saturn\n\nSaturn has [[rings]] and the moon [[titan]]. Also [[phoebe]].", ["c1"]),
        page("rings", "Rings", "# Rings\n\nRings of ice around [[titan|Titan's planet]].", ["c1"]),
        page("titan", "Titan", "# Titan\n\nThe largest moon.", ["c1"]))))
    await add_text(api, kb, "Planets", "Saturn has rings of ice and a large moon, Titan.")
    await wait_idle(api, kb)
    return kb


async def test_relation_explains_links_citations_neighbours_and_similarity(api: ApiClient, people: dict,
                                                                          llm: ScriptedOpenAI) -> None:
    kb = await build(api, llm)
    r = await api.get(f"{P}/{kb}/pages/saturn/relation/rings", token="carol")
    assert r.status == 200, r.body
    assert r.data["directLinks"] == {"aToB": True, "bToA": False}
    assert len(r.data["sharedCitations"]) == 1 and r.data["commonNeighbours"] == [{"slug": "titan", "title": "Titan"}]
    assert r.data["similarity"] is not None and "saturn links to rings" in r.data["summary"]
    assert (await api.get(f"{P}/{kb}/pages/saturn/relation/nope", token="carol")).status == 404
    ws = people["dave"]["workspace"]
    assert (await api.get(f"{P}/{kb}/pages/saturn/relation/rings", token="dave", workspace=ws)).status == 404


async def test_enrich_puts_back_a_dropped_wikilink_and_keeps_citations(api: ApiClient, people: dict,
                                                                      llm: ScriptedOpenAI) -> None:
    kb = await build(api, llm)
    llm.enqueue(Script(text="# Saturn\n\nSaturn, the sixth planet, has [[rings]] of ice and rock. Also [[phoebe]]."))
    r = await api.post(f"{P}/{kb}/pages/saturn/enrich", {"instructions": "mention its position"}, token="bob")
    assert r.status == 200, r.body
    assert r.data["restoredLinks"] == ["titan"] and "sixth planet" in r.data["markdown"]
    assert "[[titan]]" in r.data["markdown"] and r.data["citationCount"] == 1 and r.data["version"] == 2
    prompt = llm.requests[-1]["messages"][-1]["content"]
    assert "[c1] Saturn has rings of ice" in prompt and "mention its position" in prompt
    assert (await api.post(f"{P}/{kb}/pages/nope/enrich", {}, token="bob")).status == 404
    assert (await api.post(f"{P}/{kb}/pages/saturn/enrich", {}, token="carol")).status == 403


async def test_repair_retargets_broken_links_and_says_what_changed(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb = await build(api, llm)
    llm.enqueue(Script(text="# Saturn\n\nSaturn has [[rings]] and the moon [[titan]]. Also [[titan|Phoebe's neighbour]]."))
    r = await api.post(f"{P}/{kb}/pages/saturn/repair", token="bob")
    assert r.status == 200, r.body
    assert r.data["repaired"] is True and r.data["removedLinks"] == ["phoebe"] and r.data["restoredLinks"] == []
    assert all(link["exists"] for link in r.data["links"])
    assert "Broken links: phoebe" in llm.requests[-1]["messages"][-1]["content"]
    again = await api.post(f"{P}/{kb}/pages/saturn/repair", token="bob")
    assert again.data["repaired"] is False  # nothing broken: no model call
    assert (await api.get(f"/api/v1/wiki/kb/{kb}/stats", token="bob")).data["brokenLinkCount"] == 0


async def test_admin_batches_backfill_tokens_and_rebuild_the_overview(api: ApiClient, people: dict,
                                                                     llm: ScriptedOpenAI) -> None:
    kb = await build(api, llm)
    r = await api.post("/api/v1/wiki/admin/backfill-tokens", token="alice")
    assert r.status == 200 and r.data["chunks"] >= 1 and r.data["pages"] == 3 and r.data["remaining"] == 0
    assert (await api.post("/api/v1/wiki/admin/backfill-tokens", token="alice")).data["pages"] == 0
    assert (await api.post("/api/v1/wiki/admin/backfill-tokens", token="bob")).status == 403
    r = await api.post(f"/api/v1/wiki/admin/kb/{kb}/rebuild-overview", token="alice")
    assert r.status == 200 and sorted(r.data["created"]) == ["log", "overview"] and r.data["pageCount"] == 3
    overview = (await api.get(f"{KB}/{kb}/pages/overview", token="bob")).data
    assert overview["pageType"] == "overview" and "- Pages: 3" in overview["markdown"]
    assert {link["slug"] for link in overview["links"]} == {"saturn", "rings", "titan"}
    r = await api.post(f"/api/v1/wiki/admin/kb/{kb}/rebuild-overview", token="alice")
    assert r.data["created"] == []
    assert (await api.post("/api/v1/wiki/admin/kb/12345/rebuild-overview", token="alice")).status == 404
