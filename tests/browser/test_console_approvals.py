"""The approvals inbox: a scripted tool call waits, is approved, denied or always allowed from the inbox."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect

from tests.browser.conftest import failed_requests, open_console
from tests.helpers.chat import make_agent
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer


pytestmark = pytest.mark.llm_models("scripted")


@pytest.fixture
async def agent(server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI) -> str:
    await use_fake_openai(server.client, llm.url, token="admin")
    return await make_agent(server.client, token="admin", name="Writer")


def write_call(name: str) -> Script:
    return Script(tool_calls=[ScriptedToolCall("write_file", {"path": name, "content": "from the inbox"})])


async def ask(server: RunningServer, agent: str, conversation: str, text: str) -> None:
    events = await server.client.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": conversation, "message": text}, token="admin")
    assert events[-1].data["status"] == "awaiting_approval"


def written(server: RunningServer, agent: str, name: str) -> Path:
    return Path(server.platform.config.data_dir) / "agents" / agent / "workspace" / name


async def test_an_approval_is_approved_from_the_inbox_and_the_answer_continues(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(write_call("note.txt"), Script(text="Saved the note."))
    await ask(server, agent, "c-note", "save a note")
    failures = failed_requests(page)
    await open_console(page, server, admin, "#/dashboard")
    await expect(page.get_by_role("link", name="Approvals: 1 pending")).to_be_visible()
    await page.get_by_role("link", name="Approvals: 1 pending").click()

    card = page.get_by_role("article", name="write_file in save a note")
    await expect(card.locator(".severity")).to_have_text("high")
    await expect(card.locator("pre")).to_contain_text('"path": "note.txt"')
    await expect(card.get_by_role("link", name="save a note")).to_have_attribute("href", "#/chat/c-note")
    await card.get_by_role("button", name="Approve").click()
    await expect(page.get_by_text("write_file approved: the answer finished")).to_be_visible()
    await expect(page.get_by_text("Nothing is waiting for you.")).to_be_visible()
    await expect(page.get_by_role("link", name="Approvals: 0 pending")).to_be_visible()

    assert written(server, agent, "note.txt").read_text() == "from the inbox"
    messages = (await server.client.get("/api/v1/conversations/c-note/messages", token="admin")).data
    assert messages[-1]["role"] == "assistant" and "Saved the note." in messages[-1]["content"]
    assert failures == []


async def test_deny_and_always_allow_from_the_inbox(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(write_call("no.txt"), Script(text="Fine, not saved."))
    await ask(server, agent, "c-deny", "save no")
    failures = failed_requests(page)
    await open_console(page, server, admin, "#/approvals")
    await page.get_by_role("article", name="write_file in save no").get_by_role("button", name="Deny").click()
    await expect(page.get_by_text("write_file denied: the answer finished")).to_be_visible()
    assert not written(server, agent, "no.txt").exists()

    llm.enqueue(write_call("yes.txt"), Script(text="Saved."))
    await ask(server, agent, "c-always", "save yes")
    card = page.get_by_role("article", name="write_file in save yes")
    await card.get_by_role("button", name="Always allow").click()  # appears by polling, no reload
    who = (await page.locator(".who").inner_text()).strip()
    dialog = page.get_by_role("dialog", name="Always allow write_file?")
    scope = dialog.locator(".grant-scope")  # spelled out before the grant exists: who, tool, where, until when
    await expect(scope).to_have_text(
        f"Who: {who} · Tool: write_file, up to high severity · Where: the conversation “save yes” · Until: the conversation is deleted"
    )
    await dialog.get_by_label("For me, everywhere in this workspace, until I revoke it").check()
    await expect(scope).to_contain_text("Where: every agent and conversation of workspace")
    await expect(scope).to_contain_text("Until: revoked on the Security page")
    assert (await server.client.get("/api/v1/approval/grants", token="admin")).data["records"] == []  # nothing yet
    await dialog.get_by_role("button", name="Allow and approve").click()
    await expect(page.get_by_text("write_file approved: the answer finished")).to_be_visible()
    assert written(server, agent, "yes.txt").exists()
    grants = (await server.client.get("/api/v1/approval/grants", token="admin")).data["records"]
    assert [(g["scopeType"], g["toolName"], g["grantKind"], g["scopeName"]) for g in grants] == [("USER", "write_file", "ALWAYS", who)]
    await open_console(page, server, admin, "#/security/grants")  # the grant names the person, not a raw user id
    await expect(page.get_by_role("region", name="Grants", exact=True)).to_contain_text(f"user {who}")

    llm.enqueue(write_call("later.txt"), Script(text="Saved again."))
    events = await server.client.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "c-later", "message": "again"}, token="admin")
    assert events[-1].data["status"] == "completed"  # the grant lets the next call through
    assert written(server, agent, "later.txt").exists()
    assert failures == []
