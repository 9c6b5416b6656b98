"""The Memory page in headless Chromium: facts (confirm, edit, forget), contradictions, memory files, dreams."""
from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env, toast
from tests.browser.conftest import open_console
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.memory import dream_answer, fact, summarize
from tests.helpers.server import RunningServer


async def test_a_fact_is_confirmed_edited_and_forgotten_and_memory_md_follows(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    env = await admin_env(server, admin, llm)
    r = await summarize(env, [fact("city", "Lives in Lyon"), fact("pet", "Has a cat named Tom")], token="admin")
    assert r.status == 200, r.body
    await open_console(page, server, admin, f"#/memory/{env.agent_id}/facts")
    city = page.locator("li[data-fact='city']")
    await expect(city).to_contain_text("Lives in Lyon")
    await city.get_by_role("button", name="Confirm city").click()
    await expect(city).to_contain_text("confirmed")
    facts = (await server.client.get(f"/api/v1/memory/{env.agent_id}/facts", token="admin")).data
    assert next(f for f in facts if f["key"] == "city")["helpfulCount"] == 1

    await city.get_by_role("button", name="Edit city").click()
    dialog = page.get_by_role("dialog", name="Edit city")
    await dialog.get_by_label("Statement").fill("Lives in Paris")
    await dialog.get_by_role("button", name="Save").click()
    await expect(city).to_contain_text("Lives in Paris")
    await expect(city).to_contain_text("edited")

    await page.locator("li[data-fact='pet']").get_by_role("button", name="Forget pet").click()
    await expect(page.locator("li[data-fact='pet']")).to_have_count(0)

    await page.get_by_role("link", name="Files").click()
    projection = page.get_by_label("MEMORY.md (from the facts)")
    await expect(projection).to_have_value(re.compile("Lives in Paris"))
    assert "Tom" not in await projection.input_value()
    await page.locator(".file-list").get_by_role("button", name=re.compile(r"^daily.")).click()
    note = page.get_by_label(re.compile(r"^Edit daily."))
    await expect(note).to_have_value(re.compile("city: Lives in Lyon"))
    await note.fill("- prefers trains\n")
    await expect(note).to_have_value("- prefers trains\n")
    await page.get_by_role("button", name="Save", exact=True).click()
    await toast(page, "Saved")
    files = (await server.client.get(f"/api/v1/memory/{env.agent_id}/files", token="admin")).data
    daily = next(f["path"] for f in files if f["path"].startswith("daily/"))
    r = await server.client.get(f"/api/v1/memory/{env.agent_id}/files/{daily}", token="admin")
    assert r.data["content"] == "- prefers trains\n"


async def test_a_contradiction_is_resolved_and_a_focused_dream_shows_its_report_and_live_events(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    env = await admin_env(server, admin, llm)
    await summarize(env, [fact("drink", "Likes tea")], token="admin")
    await summarize(env, [fact("drink", "Likes coffee")], conversation_id="c2", token="admin")
    await open_console(page, server, admin, f"#/memory/{env.agent_id}/facts")
    conflict = page.get_by_role("region", name="Contradictions")
    await expect(conflict).to_contain_text("Likes tea")
    await conflict.get_by_role("button", name="Keep B", exact=True).click()
    await expect(conflict).to_have_count(0)
    await expect(page.locator("li[data-fact='drink']")).to_have_count(1)
    await expect(page.locator("li[data-fact='drink']")).to_contain_text("Likes coffee")

    await page.get_by_role("link", name="Dreams").click()
    await expect(page.locator(".dream-events li").first).to_contain_text("snapshot")
    status = page.locator(".dreaming-status")  # in words, not the answer's field names
    await expect(status).to_contain_text("1 remembered")
    await expect(status).to_contain_text("Last dream")
    for raw in ("configEnabled", "featureFlag", "lastNightlyDate", "memoryFile", "[object Object]"):
        await expect(page.get_by_role("region", name="Dreaming")).not_to_contain_text(raw)
    llm.enqueue(dream_answer("Coffee it is.", {"key": "drink", "action": "keep", "after": "Likes coffee"}))
    await page.get_by_label("Topic").fill("drink")
    await page.get_by_role("button", name="Dream on it").click()
    await expect(page.locator(".dream-report")).to_contain_text("Coffee it is.")
    await expect(page.locator(".dream-events")).to_contain_text("dream_completed")
    await expect(page.get_by_role("region", name="Morning card")).to_contain_text("Coffee it is.")
