"""The Data page in headless Chromium: datasource tests with the error text, conversation files, agent files, templates."""
from __future__ import annotations

import re
from typing import Any

import aiohttp
import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env, bound, toast
from tests.browser.conftest import open_console
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.server import RunningServer
from tests.test_datasources import make_db


async def test_a_datasource_test_shows_ok_and_then_the_error_for_its_missing_file(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await admin_env(server, admin, llm, name="Analyst")
    db = make_db(server)
    await open_console(page, server, admin, "#/data/datasources")
    form = page.get_by_role("form", name="New datasource")
    await form.get_by_label("Name").fill("shop")
    await form.get_by_label("File").fill("nowhere.db")
    await form.get_by_role("button", name="Add").click()
    await toast(page, "config.path: no such file")
    await form.get_by_label("File").fill("shop.db")
    await form.get_by_role("button", name="Add").click()
    item = page.locator("li[data-datasource='shop']")
    await item.get_by_role("button", name="Test").click()
    await expect(item.locator(".test-result")).to_contain_text("OK: ")
    db.unlink()
    await item.get_by_role("button", name="Test").click()
    await expect(item.locator(".test-result")).to_contain_text(re.compile(r"Failed: Refused: the datasource file is missing"))

    await page.get_by_role("switch", name="Use in Analyst").check()
    await toast(page, "Enabled for Analyst")
    agent = (await server.client.get("/api/v1/agents", token="admin")).data[0]
    assert "query_datasource" in await bound(server, agent["id"])


async def test_agent_files_upload_view_edit_and_a_conversations_uploads_and_templates(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI, tmp_path: Any
) -> None:
    env = await admin_env(server, admin, llm, name="Writer")
    await env.stream("hello", token="admin", conversation_id="conv-files")
    form = aiohttp.FormData()
    form.add_field("conversationId", "conv-files")
    form.add_field("file", b"col\n1\n", filename="data.csv", content_type="text/csv")
    assert (await server.client.post("/api/v1/chat/upload", data=form, token="admin")).status == 200

    await open_console(page, server, admin, f"#/data/workspace/{env.agent_id}")
    local = tmp_path / "plan.md"
    local.write_text("# Plan\n\nStep one.\n")
    upload = page.get_by_role("form", name="Upload a file")
    await upload.get_by_label("File to upload").set_input_files(str(local))
    await upload.get_by_label("Folder").fill("docs")
    await upload.get_by_role("button", name="Upload", exact=True).click()
    await toast(page, "Uploaded docs/plan.md")
    tree = page.locator(".agent-files > .file-tree")
    await expect(tree).to_contain_text("docs/")
    editor = page.get_by_label("Edit docs/plan.md")
    await expect(editor).to_have_value("# Plan\n\nStep one.\n")
    await editor.fill("# Plan\n\nStep two.\n")
    await page.get_by_role("button", name="Save", exact=True).click()
    await toast(page, "Saved")
    r = await server.client.get(f"/api/v1/agents/{env.agent_id}/workspace/files/docs/plan.md", token="admin")
    assert r.raw == b"# Plan\n\nStep two.\n"

    await page.get_by_role("link", name="Conversation files").click()
    await expect(page.locator(".upload-list li")).to_contain_text("data.csv")

    await page.get_by_role("link", name="Templates").click()
    first = page.locator(".template-list section").first
    name = await first.get_attribute("data-template")
    await first.get_by_role("button", name="Create an agent from it").click()
    await toast(page, "Created agent")
    names = [a["name"] for a in (await server.client.get("/api/v1/agents", token="admin")).data]
    assert any(n.startswith(name) for n in names) and len(names) == 2
