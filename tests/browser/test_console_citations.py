"""The chat view shows the knowledge passages an answer was given as source chips that open the passage."""
from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import open_console
from tests.browser.test_console_chat import last_turn, send
from tests.helpers.chat import make_agent
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.server import RunningServer
from tests.helpers.wiki import make_kb, pages_answer, use_fake_wiki_models, wait_idle
from tests.helpers.wiki import page as wiki_page
from tests.test_wiki_access import upload


async def test_an_answer_from_a_knowledge_base_shows_source_chips_that_open_the_page(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    api = server.client
    await use_fake_wiki_models(api, llm.url, token="admin")
    kb = await make_kb(api, token="admin", name="Office")
    llm.enqueue(Script(text=pages_answer(wiki_page(
        "office-kettle", "Office kettle",
        "# Office kettle\n\nThe kettle sits in the kitchen.\n\nIt is descaled with citric acid every three weeks.", ["c1"]))))
    r = await upload(api, kb, "kettle.md", b"# Kettle\n\nThe kettle is descaled with citric acid every three weeks.\n", token="admin")
    assert r.status == 200, r.body
    await wait_idle(api, kb, token="admin")
    await make_agent(api, token="admin", name="Helper", primaryKbId=kb)
    llm.enqueue(Script(text="Every three weeks [1]."))
    await open_console(page, server, admin)
    await send(page, "How often is the kettle descaled?")
    turn = last_turn(page)
    await expect(turn).to_have_attribute("data-status", "completed")
    chip = turn.locator(".turn-sources .source-chip", has_text="Office kettle")
    await expect(chip.locator("summary")).to_have_text(re.compile(r"^\[\d\] Office kettle$"))
    await chip.locator("summary").click()
    await expect(chip.locator(".source-snippet")).to_contain_text("every three weeks")
    await chip.get_by_role("link", name="Open page").click()
    await expect(page.locator(".page-head h1")).to_have_text("Office kettle")
    assert page.url.endswith(f"#/wiki/{kb}/page/office-kettle")
    # Back in the chat, the stored answer shows its sources again (from the message's metadata).
    await page.go_back()
    await page.reload()
    await expect(last_turn(page).locator(".source-chip", has_text="Office kettle")).to_be_visible()
