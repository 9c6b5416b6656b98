"""A folder of notes becomes pages without a capable LLM: one page per note, its title, headings and [[links]] kept."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, add_text, make_kb, restart, use_fake_wiki_models, wait_idle

FAST = {"wiki_watch_debounce_s": 0.1, "wiki_watch_check_s": 0.1}


def write_notes(folder: Path, n: int = 20) -> None:
    for i in range(n):
        nxt = (i + 1) % n
        (folder / f"note-{i:02d}.md").write_text(
            f"# Topic {i:02d}\n\nTopic {i:02d} is about subject number {i}.\n\n## Details\n\nSee [[note-{nxt:02d}]] next.\n"
        )


async def all_settled(api: ApiClient, kb: str, total: int, timeout: float = 60.0) -> dict:
    async def settled() -> dict:
        status = (await api.get(f"{KB}/{kb}/processing-status", token="bob")).data
        assert status["total"] == total and status["idle"], f"not settled: {status}"
        return status

    return await eventually(settled, timeout=timeout, interval=0.1)


@pytest.mark.config(**FAST)
async def test_a_fresh_install_links_twenty_notes_with_only_the_embedded_model_and_gets_twenty_pages(
        server: RunningServer, people: dict, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    write_notes(notes)
    server = await restart(server, **FAST, wiki_source_roots=f"1:{tmp_path}")
    try:
        api = server.client
        default = (await api.get("/api/v1/models/default", token="alice")).data
        assert default["providerId"] == "local"  # nothing configured: the embedded model only
        kb = await make_kb(api)
        assert (await api.put(f"{KB}/{kb}/source-directory", {"path": "notes", "watch": False}, token="bob")).status == 200
        status = await all_settled(api, kb, 20)
        assert status["counts"]["completed"] == 20 and status["counts"]["failed"] == 0, status
        listed = (await api.get(f"{KB}/{kb}/pages", token="bob", params={"size": "100"})).data
        rows = listed["records"]
        assert sorted(p["title"] for p in rows) == [f"Topic {i:02d}" for i in range(20)]
        assert {p["origin"] for p in rows} == {"note"}
        page = (await api.get(f"{KB}/{kb}/pages/note-03", token="bob")).data
        assert page["title"] == "Topic 03" and "## Details" in page["markdown"]
        assert page["links"] == [{"target": "note-04", "slug": "note-04", "title": "Topic 04", "exists": True, "archived": 0}]
        jobs = (await api.get(f"/api/v1/wiki/kb/{kb}/jobs", token="bob", params={"limit": "100"})).data
        note_steps = [s for j in jobs for s in j["steps"] if s["step"] == "note"]
        assert len(note_steps) == 20 and "Skipped the wiki digest" in note_steps[0]["reason"], note_steps[0]
        # The note is searchable by its embedding and text.
        r = await api.post(f"/api/v1/wiki/kb/{kb}/search-preview", {"query": "Topic 07 subject number 7"}, token="bob")
        assert r.status == 200, r.body
        assert "note-07" in str(r.data), r.data
    finally:
        await server.stop()


async def test_a_capable_model_still_digests_but_notes_mode_keeps_each_material_as_one_page(
        api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, pageWriting="notes")
    before = len(llm.requests)
    raw = await add_text(api, kb, "Ideas", "Intro line.\n\n# Big Idea\n\nLinks to [[Other Idea]].")
    await wait_idle(api, kb)
    chats = [r for r in llm.requests[before:] if "messages" in r]
    assert chats == []  # no page-writing call
    page = (await api.get(f"{KB}/{kb}/pages/ideas", token="bob")).data
    assert page["title"] == "Big Idea" and page["rawIds"] == [raw["id"]]
    assert page["links"][0]["target"] == "Other Idea" and page["links"][0]["exists"] is False
    r = await api.put(f"{KB}/{kb}/config", {"pageWriting": "sometimes"}, token="bob")
    assert r.status == 400 and r.msg.startswith("pageWriting"), r.body


async def test_a_note_page_a_person_edited_keeps_their_text_and_the_notes_version_waits_for_review(
        api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, pageWriting="notes")
    raw = await add_text(api, kb, "Tea", "# Tea\n\nSteep for three minutes.")
    await wait_idle(api, kb)
    r = await api.put(f"{KB}/{kb}/pages/tea", {"markdown": "# Tea\n\nMine: two minutes."}, token="bob")
    assert r.status == 200, r.body
    r = await api.post(f"{KB}/{kb}/raw/{raw['id']}/reprocess?force=true", token="bob")
    assert r.status == 200, r.body
    await wait_idle(api, kb)
    page = (await api.get(f"{KB}/{kb}/pages/tea", token="bob")).data
    assert "Mine: two minutes" in page["markdown"]  # the re-sync did not overwrite the person's text
    assert page["pendingChange"]["action"] == "update" and "three minutes" in page["pendingChange"]["markdown"]
