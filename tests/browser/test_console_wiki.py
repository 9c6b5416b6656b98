"""The wiki in the console: link a folder, a file becomes a page, wikilinks, backlinks, citations, search, research."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import failed_requests, open_console
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.server import RunningServer
from tests.helpers.wiki import page as wiki_page
from tests.helpers.wiki import pages_answer, use_fake_wiki_models

ROOT = Path(tempfile.mkdtemp(prefix="wiki-browser-roots-"))


@pytest.mark.config(wiki_source_roots=str(ROOT), wiki_watch_debounce_s=0.1, wiki_watch_check_s=0.2)
async def test_a_linked_folder_becomes_pages_with_wikilinks_search_and_research(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    await use_fake_wiki_models(server.client, llm.url, token="admin")
    notes = Path(tempfile.mkdtemp(dir=ROOT))
    bad = failed_requests(page)
    await open_console(page, server, admin, "#/wiki")
    await page.get_by_label("Name").fill("Garden")
    await page.get_by_role("button", name="Create").click()
    await expect(page.locator(".page-head h1")).to_have_text("Garden")

    await page.get_by_label("Folder on the server").fill(str(notes))
    await page.get_by_role("button", name="Link").click()
    await expect(page.get_by_label("Watcher state")).to_have_text("watching")

    llm.enqueue(Script(text=pages_answer(
        wiki_page("tomatoes", "Tomatoes", "# Tomatoes\n\nTomatoes need sun and [[compost]].", ["c1"]),
        wiki_page("compost", "Compost", "# Compost\n\nRotted leaves that feed the soil.", ["c1"]))))
    (notes / "garden.md").write_text("Tomatoes grow best in full sun with compost-rich soil.")
    pages = page.locator("#wiki-pages")
    await expect(pages.get_by_role("link", name="Tomatoes")).to_be_visible(timeout=20_000)

    await pages.get_by_role("link", name="Tomatoes").click()
    await expect(page.locator(".page-head h1")).to_have_text("Tomatoes")
    await page.locator(".wiki-markdown a.wikilink", has_text="compost").click()
    await expect(page.locator(".page-head h1")).to_have_text("Compost")
    assert page.url.endswith("/page/compost")
    await expect(page.locator("#wiki-backlinks").get_by_role("link", name="Tomatoes")).to_be_visible()
    await page.locator("#wiki-citations").get_by_role("button").first.click()
    await expect(page.get_by_role("dialog")).to_contain_text("compost-rich soil")
    await page.keyboard.press("Escape")

    await page.get_by_role("link", name="Knowledge base").click()
    await page.get_by_label("Search pages").fill("rotted leaves soil")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(page.locator(".search-results li").first).to_contain_text("Compost")

    llm.enqueue(Script(text=json.dumps({"queries": ["tomatoes sun"]})),
                Script(text=json.dumps({"findings": [{"text": "Tomatoes want full sun", "sources": ["c1"]}], "nextQueries": []})),
                Script(text="Tomatoes want **full sun** and [[compost]] [c1]."))
    await page.get_by_label("Question").fill("What do tomatoes need?")
    await page.get_by_role("button", name="Research").click()
    report = page.locator(".research-report")
    await expect(report).to_contain_text("full sun")
    await expect(page.locator(".research-log li[data-event=finding]")).to_contain_text("Tomatoes want full sun")
    await report.get_by_role("link", name="compost").click()
    await expect(page.locator(".page-head h1")).to_have_text("Compost")
    # Phone width: nothing scrolls sideways on the page view or the knowledge base view.
    await page.set_viewport_size({"width": 390, "height": 844})
    for link in (None, "Knowledge base"):
        if link:
            await page.get_by_role("link", name=link).click()
            await expect(page.locator("#wiki-pages")).to_be_visible()
        await page.wait_for_load_state("networkidle")
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    assert bad == []


async def test_an_uploaded_file_becomes_a_page_that_can_be_edited(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_wiki_models(server.client, llm.url, token="admin")
    r = await server.client.post("/api/v1/wiki/knowledge-bases", {"name": "Kitchen"}, token="admin")
    kb = r.data["id"]
    bad = failed_requests(page)
    await open_console(page, server, admin, f"#/wiki/{kb}")
    await expect(page.locator(".page-head h1")).to_have_text("Kitchen")
    await expect(page.locator("#wiki-source")).to_contain_text("wiki_source_roots")  # no roots configured here
    llm.enqueue(Script(text=pages_answer(wiki_page("bread", "Bread", "# Bread\n\nFlour, water, salt and [[yeast]].", ["c1"]))))
    await page.locator("input[type=file]").set_input_files(
        files=[{"name": "bread.md", "mimeType": "text/markdown", "buffer": b"Bread is flour, water, salt and yeast."}])
    await expect(page.locator("#wiki-pages").get_by_role("link", name="Bread")).to_be_visible(timeout=20_000)
    await expect(page.locator("#wiki-progress")).to_contain_text("1 done")
    await page.locator("#wiki-pages").get_by_role("link", name="Bread").click()
    await expect(page.locator(".wiki-markdown a.wikilink.missing")).to_have_text("yeast")
    await page.get_by_role("button", name="Edit").click()
    await page.get_by_label("Markdown").fill("# Bread\n\nFlour, water and salt. No [[yeast]] in flatbread.")
    await page.get_by_role("button", name="Save").click()
    await expect(page.locator(".wiki-markdown")).to_contain_text("No yeast in flatbread")
    await expect(page.locator(".page-head")).to_contain_text("version 2")
    assert bad == []


async def test_a_failed_material_shows_its_reason_and_retries_from_the_console(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_wiki_models(server.client, llm.url, token="admin")
    kb = (await server.client.post("/api/v1/wiki/knowledge-bases", {"name": "Pantry"}, token="admin")).data["id"]
    llm.enqueue(Script(text="I would rather not write JSON today."))
    r = await server.client.post(f"/api/v1/wiki/knowledge-bases/{kb}/raw/text", {"title": "Rice", "text": "Rice keeps for years."},
                                 token="admin")
    assert r.status == 200, r.body
    bad = failed_requests(page)
    await open_console(page, server, admin, f"#/wiki/{kb}")
    failed = page.get_by_label("Failed materials")
    await expect(failed).to_contain_text("Rice", timeout=20_000)
    await expect(failed).to_contain_text("holds no JSON object")
    llm.enqueue(Script(text=pages_answer(wiki_page("rice", "Rice", "# Rice\n\nKeeps for years.", ["c1"]))))
    await failed.get_by_role("button", name="Retry Rice").click()
    await expect(page.locator("#wiki-pages").get_by_role("link", name="Rice")).to_be_visible(timeout=20_000)
    await expect(page.get_by_label("Failed materials")).to_have_count(0)
    await expect(page.locator("#wiki-progress")).to_contain_text("1 done")
    assert bad == []


async def test_a_hand_edited_page_shows_the_source_s_new_version_to_accept(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    import asyncio
    api = server.client
    await use_fake_wiki_models(api, llm.url, token="admin")
    kb = (await api.post("/api/v1/wiki/knowledge-bases", {"name": "Tea"}, token="admin")).data["id"]
    llm.enqueue(Script(text=pages_answer(wiki_page("tea", "Tea", "# Tea\n\nSteep for five minutes.", ["c1"]))))
    raw = (await api.post(f"/api/v1/wiki/knowledge-bases/{kb}/raw/text", {"title": "Tea", "text": "Steep tea."}, token="admin")).data
    for _ in range(200):
        if (await api.get(f"/api/v1/wiki/knowledge-bases/{kb}/pages/tea", token="admin")).status == 200:
            break
        await asyncio.sleep(0.05)
    assert (await api.put(f"/api/v1/wiki/knowledge-bases/{kb}/pages/tea", {"markdown": "# Tea\n\nMine: two minutes."}, token="admin")).status == 200
    llm.enqueue(Script(text=pages_answer(wiki_page("tea", "Tea", "# Tea\n\nSteep for three minutes.", ["c1"]))))
    r = await api.post(f"/api/v1/wiki/knowledge-bases/{kb}/raw/{raw['id']}/reprocess?force=true", token="admin")
    assert r.status == 200, r.body
    for _ in range(200):
        if (await api.get(f"/api/v1/wiki/knowledge-bases/{kb}/pages/tea", token="admin")).data["pendingChange"]:
            break
        await asyncio.sleep(0.05)
    bad = failed_requests(page)
    await open_console(page, server, admin, f"#/wiki/{kb}/page/tea")
    pending = page.locator("#wiki-pending-change")
    await expect(pending).to_contain_text("three minutes")
    await expect(page.locator(".wiki-markdown").last).to_contain_text("Mine: two minutes")
    await pending.get_by_role("button", name="Accept").click()
    await expect(pending).to_have_count(0)
    await expect(page.locator(".wiki-markdown")).to_contain_text("three minutes")
    assert bad == []
