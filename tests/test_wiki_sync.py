"""LLM Wiki folder sync that respects people: stale pages archived, hand edits kept, re-embedding, more formats."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, make_kb, page, pages_answer, restart, use_fake_wiki_models
from tests.test_wiki_source import FAST, material, page_says


async def linked_kb(server: RunningServer, llm: ScriptedOpenAI, tmp_path: Path) -> tuple[RunningServer, ApiClient, str, Path]:
    """A server whose KB has `notes/` linked (not watched: the test scans), with the scripted models."""
    notes = tmp_path / "notes"
    notes.mkdir()
    server = await restart(server, **FAST, wiki_source_roots=f"1:{tmp_path}")
    api = server.client
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api)
    return server, api, kb, notes


async def scan(api: ApiClient, kb: str) -> dict[str, Any]:
    r = await api.post(f"{KB}/{kb}/scan", token="bob")
    assert r.status == 200, r.body
    return r.data


async def slugs(api: ApiClient, kb: str) -> list[str]:
    r = await api.get(f"{KB}/{kb}/pages", params={"size": "100"}, token="bob")
    assert r.status == 200, r.body
    return sorted(p["slug"] for p in r.data["records"])


async def search_slugs(api: ApiClient, kb: str, query: str) -> list[str]:
    r = await api.post(f"/api/v1/wiki/kb/{kb}/search-preview", {"query": query, "topK": 10}, token="bob")
    assert r.status == 200, r.body
    return [h["slug"] for h in r.data["results"]]


@pytest.mark.config(**FAST)
async def test_pages_an_edited_note_no_longer_produces_are_archived_and_come_back_when_it_does(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Path) -> None:
    server, api, kb, notes = await linked_kb(server, llm, tmp_path)
    try:
        llm.enqueue(Script(text=pages_answer(
            page("pluto", "Pluto", "# Pluto\n\nPluto is the ninth planet."),
            page("ceres", "Ceres", "# Ceres\n\nCeres orbits in the asteroid belt."))))
        (notes / "sky.md").write_text("Pluto is the ninth planet. Ceres orbits in the asteroid belt.")
        assert (await api.put(f"{KB}/{kb}/source-directory", {"path": "notes", "watch": False}, token="bob")).status == 200
        await eventually(material(api, kb, "sky.md", status="completed"))
        assert await slugs(api, kb) == ["ceres", "pluto"]

        # The note is corrected: Pluto is no planet any more and the new version writes no Pluto page.
        llm.enqueue(Script(text=pages_answer(page("ceres", "Ceres", "# Ceres\n\nCeres is a dwarf planet in the asteroid belt."))))
        (notes / "sky.md").write_text("Ceres is a dwarf planet in the asteroid belt.")
        assert (await scan(api, kb))["updated"] == 1
        await eventually(page_says(api, kb, "ceres", "dwarf planet"))
        pluto = await eventually(page_says(api, kb, "pluto", "ninth planet", archived=1))
        assert pluto["archivedReason"] == "no longer produced by its source" and pluto["rawIds"] == []
        assert await slugs(api, kb) == ["ceres"]
        assert "pluto" not in await search_slugs(api, kb, "Pluto ninth planet")
        archived = (await api.get(f"{KB}/{kb}/pages/archived", token="bob")).data
        assert [p["slug"] for p in archived] == ["pluto"]

        # A later version writes the page again: it is live again, with the new text.
        llm.enqueue(Script(text=pages_answer(
            page("ceres", "Ceres", "# Ceres\n\nCeres is a dwarf planet."),
            page("pluto", "Pluto", "# Pluto\n\nPluto is a dwarf planet too."))))
        (notes / "sky.md").write_text("Ceres is a dwarf planet. Pluto is a dwarf planet too.")
        await scan(api, kb)
        revived = await eventually(page_says(api, kb, "pluto", "dwarf planet too"))
        assert revived["archivedReason"] is None
        assert await slugs(api, kb) == ["ceres", "pluto"]
    finally:
        await server.stop()


@pytest.mark.config(**FAST)
async def test_a_page_a_person_archived_stays_archived_when_the_note_writes_it_again(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Path) -> None:
    server, api, kb, notes = await linked_kb(server, llm, tmp_path)
    try:
        llm.enqueue(Script(text=pages_answer(page("moon", "Moon", "# Moon\n\nThe Moon orbits Earth."))))
        (notes / "moon.md").write_text("The Moon orbits Earth.")
        assert (await api.put(f"{KB}/{kb}/source-directory", {"path": "notes", "watch": False}, token="bob")).status == 200
        await eventually(material(api, kb, "moon.md", status="completed"))
        assert (await api.post(f"{KB}/{kb}/pages/moon/archive", token="bob")).status == 200
        llm.enqueue(Script(text=pages_answer(page("moon", "Moon", "# Moon\n\nThe Moon orbits Earth every month."))))
        (notes / "moon.md").write_text("The Moon orbits Earth every month.")
        await scan(api, kb)
        moon = await eventually(page_says(api, kb, "moon", "every month", archived=1))
        assert moon["archivedReason"] is None
    finally:
        await server.stop()


async def get_page(api: ApiClient, kb: str, slug: str) -> dict[str, Any]:
    r = await api.get(f"{KB}/{kb}/pages/{slug}", token="bob")
    assert r.status == 200, r.body
    return r.data


def pending_is(api: ApiClient, kb: str, slug: str, action: str) -> Any:
    async def check() -> Any:
        p = await get_page(api, kb, slug)
        return p["pendingChange"] and p["pendingChange"]["action"] == action and p
    return check


def no_pending(api: ApiClient, kb: str, slug: str) -> Any:
    async def check() -> Any:
        p = await get_page(api, kb, slug)
        return p["pendingChange"] is None and p
    return check


@pytest.mark.config(**FAST)
async def test_a_page_a_person_edited_is_not_overwritten_by_a_re_sync_and_the_new_version_waits_for_review(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Path) -> None:
    server, api, kb, notes = await linked_kb(server, llm, tmp_path)
    try:
        llm.enqueue(Script(text=pages_answer(
            page("tea", "Tea", "# Tea\n\nSteep green tea for five minutes."),
            page("kettle", "Kettle", "# Kettle\n\nA kettle boils water."))))
        (notes / "tea.md").write_text("Steep green tea for five minutes. A kettle boils water.")
        assert (await api.put(f"{KB}/{kb}/source-directory", {"path": "notes", "watch": False}, token="bob")).status == 200
        await eventually(material(api, kb, "tea.md", status="completed"))
        mine = "# Tea\n\nSteep green tea for two minutes at 80 degrees, never boiling."
        r = await api.put(f"{KB}/{kb}/pages/tea", {"markdown": mine}, token="bob")
        assert r.status == 200 and r.data["origin"] == "manual" and r.data["pendingChange"] is None, r.body
        version = r.data["version"]
        r = await api.put(f"{KB}/{kb}/pages/kettle", {"markdown": "# Kettle\n\nMine boils water, and whistles."}, token="bob")
        assert r.status == 200, r.body

        # The note changes: tea's new version waits beside the person's text; kettle is no longer written.
        llm.enqueue(Script(text=pages_answer(page("tea", "Tea", "# Tea\n\nSteep green tea for three minutes."))))
        (notes / "tea.md").write_text("Steep green tea for three minutes.")
        await scan(api, kb)
        tea = await eventually(pending_is(api, kb, "tea", "update"))
        assert tea["markdown"] == mine and tea["origin"] == "manual" and tea["version"] == version
        assert tea["pendingChange"]["markdown"] == "# Tea\n\nSteep green tea for three minutes."
        kettle = await eventually(pending_is(api, kb, "kettle", "archive"))
        assert kettle["archived"] == 0 and "whistles" in kettle["markdown"]
        listed = (await api.get(f"{KB}/{kb}/pages?pendingChange=true", token="bob")).data
        assert sorted((p["slug"], p["hasPendingChange"]) for p in listed) == [("kettle", True), ("tea", True)]
        assert "tea" in await search_slugs(api, kb, "80 degrees")  # the search index holds the person's text

        # A viewer cannot decide; a page without a pending change has nothing to accept.
        assert (await api.post(f"{KB}/{kb}/pages/tea/pending-change/accept", token="carol")).status == 403
        r = await api.post(f"{KB}/{kb}/pages/tea/pending-change/dismiss", token="bob")
        assert r.status == 200 and r.data["pendingChange"] is None and r.data["markdown"] == mine, r.body
        r = await api.post(f"{KB}/{kb}/pages/tea/pending-change/accept", token="bob")
        assert r.status == 409 and r.body["msg"] == "The page has no pending change", r.body  # the page's state
        assert (await api.get(f"{KB}/{kb}/pages?pendingChange=maybe", token="bob")).status == 400
        assert (await api.get(f"{KB}/{kb}/pages?pendingChange=%20true", token="bob")).status == 400  # as sent: the enum

        # Accepting the archive archives the person's page; accepting a new version replaces the hand edit.
        r = await api.post(f"{KB}/{kb}/pages/kettle/pending-change/accept", token="bob")
        assert r.status == 200 and r.data["archived"] == 1 and r.data["pendingChange"] is None, r.body
        llm.enqueue(Script(text=pages_answer(page("tea", "Tea", "# Tea\n\nSteep green tea for four minutes."))))
        (notes / "tea.md").write_text("Steep green tea for four minutes.")
        await scan(api, kb)
        await eventually(pending_is(api, kb, "tea", "update"))
        # A version that says just what the person wrote leaves nothing to review.
        llm.enqueue(Script(text=pages_answer(page("tea", "Tea", mine))))
        (notes / "tea.md").write_text("Steep green tea for two minutes at 80 degrees.")
        await scan(api, kb)
        await eventually(no_pending(api, kb, "tea"))
        llm.enqueue(Script(text=pages_answer(page("tea", "Tea", "# Tea\n\nSteep green tea for four minutes."))))
        (notes / "tea.md").write_text("Steep green tea for four minutes, really.")
        await scan(api, kb)
        await eventually(pending_is(api, kb, "tea", "update"))
        r = await api.post(f"{KB}/{kb}/pages/tea/pending-change/accept", token="bob")
        assert r.status == 200, r.body
        assert r.data["markdown"] == "# Tea\n\nSteep green tea for four minutes." and r.data["origin"] == "generated"
        assert r.data["version"] == version + 1 and r.data["pendingChange"] is None
        assert "tea" in await search_slugs(api, kb, "four minutes")
    finally:
        await server.stop()


def office_files(folder: Path) -> None:
    """A Word document, a deck, a workbook, an e-book and a Python module, each with one telling phrase."""
    import docx
    import openpyxl
    import pptx
    from ebooklib import epub

    document = docx.Document()
    document.add_heading("Harvest report", level=1)
    document.add_paragraph("The orchard yielded marmalade oranges this year.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "crate", "forty"
    document.save(str(folder / "report.docx"))

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Roadmap"
    slide.placeholders[1].text = "Ship the zeppelin dashboard in spring"
    deck.save(str(folder / "plan.pptx"))

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["item", "cost"])
    sheet.append(["telescope", 1200])
    book.save(str(folder / "budget.xlsx"))

    ebook = epub.EpubBook()
    ebook.set_identifier("id-1")
    ebook.set_title("Sea stories")
    ebook.set_language("en")
    chapter = epub.EpubHtml(title="One", file_name="one.xhtml", lang="en")
    chapter.content = "<html><body><h1>One</h1><p>The lighthouse keeper fed the albatross.</p></body></html>"
    ebook.add_item(chapter)
    ebook.toc = [chapter]
    ebook.spine = [chapter]
    ebook.add_item(epub.EpubNcx())
    ebook.add_item(epub.EpubNav())
    epub.write_epub(str(folder / "sea.epub"), ebook)

    (folder / "tides.py").write_text('def tide_height(hour: int) -> float:\n    """Quokka tide model."""\n    return hour * 0.5\n')


async def chunk_text_for(api: ApiClient, kb: str, query: str) -> str:
    r = await api.post(f"/api/v1/wiki/kb/{kb}/search-preview", {"query": query, "topK": 10}, token="bob")
    assert r.status == 200, r.body
    return "\n".join(c["snippet"] for c in r.data["chunks"])


@pytest.mark.config(**FAST)
async def test_a_folder_of_office_documents_an_ebook_and_code_is_imported_as_text(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Path) -> None:
    server, api, kb, notes = await linked_kb(server, llm, tmp_path)
    try:
        office_files(notes)
        (notes / "broken.docx").write_bytes(b"PK\x03\x04 not really a document")
        r = await api.put(f"{KB}/{kb}/source-directory", {"path": "notes", "watch": False}, token="bob")
        assert r.status == 200, r.body
        for name in ("report.docx", "plan.pptx", "budget.xlsx", "sea.epub", "tides.py"):
            await eventually(material(api, kb, name, removed=False))
        rows = {r["sourcePath"]: r for r in (await api.get(f"{KB}/{kb}/raw", token="bob")).data}
        assert rows["tides.py"]["contentType"] == "text/x-python"
        assert rows["report.docx"]["contentType"].endswith("wordprocessingml.document")
        assert "broken.docx" not in rows
        await eventually(lambda: chunk_text_for(api, kb, "albatross"))
        for query, text in [("marmalade", "marmalade oranges"), ("crate", "crate | forty"), ("zeppelin", "zeppelin dashboard"),
                            ("telescope", "telescope | 1200"), ("albatross", "lighthouse keeper fed the albatross"),
                            ("Quokka", "```python")]:
            assert text in await eventually(lambda: chunk_text_for(api, kb, query)), query
        assert "# Harvest report" in await chunk_text_for(api, kb, "Harvest")
        assert "## Budget" in await chunk_text_for(api, kb, "Budget")
        scan_result = await scan(api, kb)
        assert any(f["path"] == "broken.docx" and "Unreadable DOCX" in f["error"] for f in scan_result["failed"]), scan_result

        # An upload takes the same formats.
        import aiohttp
        form = aiohttp.FormData()
        form.add_field("file", (notes / "plan.pptx").read_bytes(), filename="deck.pptx", content_type="application/octet-stream")
        r = await api.post(f"{KB}/{kb}/raw/upload", data=form, token="bob")
        assert r.status == 200 and r.data["contentType"].endswith("presentationml.presentation"), r.body
    finally:
        await server.stop()


async def test_an_archive_that_inflates_past_the_limit_is_refused(api: ApiClient, people: dict) -> None:
    import io
    import zipfile

    import aiohttp
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", b"\0" * (201 * 1024 * 1024))
    kb = await make_kb(api)
    form = aiohttp.FormData()
    form.add_field("file", buf.getvalue(), filename="bomb.docx", content_type="application/octet-stream")
    r = await api.post(f"{KB}/{kb}/raw/upload", data=form, token="bob")
    assert r.status == 400 and "unpacks to more than" in r.body["msg"], r.body


def cosine(a: str, b: str, model: str, dims: int = 8) -> float:
    """The cosine the scripted server's vectors of two texts have under an embedding model."""
    import numpy as np

    from tests.helpers.llm_script import fake_embedding
    salt = "" if model == "fake-embedding" else f"{model}:"
    va, vb = (np.asarray(fake_embedding(salt + t, dims), dtype=np.float32) for t in (a, b))
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


async def reembed_state(api: ApiClient, kb: str) -> dict[str, Any] | None:
    r = await api.get(f"{KB}/{kb}/processing-status", token="bob")
    assert r.status == 200, r.body
    return r.data["reembed"]


async def page_vector_score(api: ApiClient, kb: str, query: str) -> float:
    r = await api.post(f"/api/v1/wiki/kb/{kb}/search-preview", {"query": query, "topK": 5}, token="bob")
    assert r.status == 200 and r.data["vectorSearch"], r.body
    hit = next(h for h in r.data["results"] if h["slug"] == "saturn")  # the keyword always finds it
    return float(hit["vectorScore"])


@pytest.mark.config(wiki_reembed_check_s=0.2)
async def test_switching_the_embedding_model_re_embeds_in_the_background_and_search_never_mixes_models(
        api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    import asyncio
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api)
    llm.enqueue(Script(text=pages_answer(page("saturn", "Saturn", "# Saturn\n\nSaturn has rings of ice."))))
    r = await api.post(f"{KB}/{kb}/raw/text", {"title": "Saturn", "text": "GATE Saturn has rings of ice and rock."}, token="bob")
    assert r.status == 200, r.body
    await eventually(material(api, kb, None, status="completed"))
    chunk, page_text, query = "GATE Saturn has rings of ice and rock.", "Saturn\n\n# Saturn\n\nSaturn has rings of ice.", "Saturn"
    assert await page_vector_score(api, kb, query) == round(max(0.0, cosine(query, page_text, "fake-embedding"),
                                                                cosine(query, chunk, "fake-embedding")), 4)

    # A second model of the same size: its query vectors compared with the first one's would score by chance.
    llm.embedding_hold, llm.embedding_release = "GATE", asyncio.Event()  # the re-embedding of the chunk waits
    r = await api.post("/api/v1/models/fake/models", {"modelName": "fake-embedding-b", "modelType": "embedding"}, token="alice")
    assert r.status == 200, r.body
    model_b = r.data["id"]
    # What a search mixing the models would score: the new model's query vector against the old vectors.
    mixed = max(cosine(f"fake-embedding-b:{query}", page_text, "fake-embedding"), cosine(f"fake-embedding-b:{query}", chunk, "fake-embedding"))
    assert mixed > 0
    assert (await api.post("/api/v1/models/embedding/default", {"modelId": model_b}, token="alice")).status == 200
    job = await eventually(lambda: _running(api, kb))
    assert job["modelId"] == model_b and job["done"] == 0 and job["total"] == 2, job
    assert await page_vector_score(api, kb, query) == 0.0  # old vectors wait; the keyword still finds the page

    llm.embedding_release.set()
    job = await eventually(lambda: _finished(api, kb, model_b))
    assert job["state"] == "completed" and job["done"] == job["total"] == 2, job
    expected = round(max(0.0, cosine(query, page_text, "fake-embedding-b"), cosine(query, chunk, "fake-embedding-b")), 4)
    assert expected > 0 and await page_vector_score(api, kb, query) == expected

    # A model of another size: after its re-embedding, vector search works again (it scored 0 forever before).
    llm.embedding_dims = {"fake-embedding-wide": 16}
    r = await api.post("/api/v1/models/fake/models", {"modelName": "fake-embedding-wide", "modelType": "embedding"}, token="alice")
    wide = r.data["id"]
    assert (await api.post("/api/v1/models/embedding/default", {"modelId": wide}, token="alice")).status == 200
    await eventually(lambda: _finished(api, kb, wide))
    expected = round(max(0.0, cosine(query, page_text, "fake-embedding-wide", 16), cosine(query, chunk, "fake-embedding-wide", 16)), 4)
    assert expected > 0 and await page_vector_score(api, kb, query) == expected


async def _running(api: ApiClient, kb: str) -> Any:
    job = await reembed_state(api, kb)
    return job if job and job["state"] == "running" else None


async def _finished(api: ApiClient, kb: str, model: str) -> Any:
    job = await reembed_state(api, kb)
    return job if job and job["modelId"] == model and job["state"] == "completed" else None


@pytest.mark.config(wiki_reembed_check_s=3600)
async def test_the_check_interval_paces_re_embedding_and_a_kb_config_change_checks_at_once(
        server: RunningServer, api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api)
    llm.enqueue(Script(text=pages_answer(page("saturn", "Saturn", "# Saturn\n\nSaturn has rings of ice."))))
    assert (await api.post(f"{KB}/{kb}/raw/text", {"title": "Saturn", "text": "Saturn has rings."}, token="bob")).status == 200
    await eventually(material(api, kb, None, status="completed"))
    r = await api.post("/api/v1/models/fake/models", {"modelName": "fake-embedding-b", "modelType": "embedding"}, token="alice")
    model_b = r.data["id"]
    assert (await api.post("/api/v1/models/embedding/default", {"modelId": model_b}, token="alice")).status == 200
    engine = server.platform.services.wiki
    await eventually(lambda: not engine.tasks, what="the wiki's background work after the change ended")
    assert await reembed_state(api, kb) is None  # nothing checked: the next check is an hour away
    assert (await api.put(f"{KB}/{kb}/config", {"chunkSize": 1000}, token="bob")).status == 200
    job = await eventually(lambda: _finished(api, kb, model_b))
    assert job["done"] == job["total"] == 2, job
