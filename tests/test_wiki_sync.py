"""LLM Wiki folder sync that respects people: stale pages archived, hand edits kept, re-embedding, more formats."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, make_kb, page, pages_answer, restart, use_fake_wiki_models
from tests.test_wiki_source import FAST, eventually, material, page_says


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
    r = await api.get(f"{KB}/{kb}/pages", token="bob")
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
