"""The Channels page in headless Chromium: webchat embed snippet and live preview, an IM channel's webhook and secret."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env
from tests.browser.conftest import open_console
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.server import RunningServer


async def test_a_webchat_channel_gives_an_embed_snippet_and_its_live_preview_streams_an_answer(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await admin_env(server, admin, llm, name="Support")
    llm.enqueue(Script(text=["Hello ", "from ", "the ", "support ", "agent."], delay_s=0.05))
    await open_console(page, server, admin, "#/channels")
    form = page.get_by_role("form", name="New channel")
    await form.get_by_label("Name").fill("Site chat")
    await form.get_by_label("Title").fill("Ask Support")
    await form.get_by_label("Welcome message").fill("Hi! How can I help?")
    await form.get_by_role("button", name="Check").click()
    await expect(form.locator(".preflight")).to_contain_text("Preflight passed")
    await form.get_by_role("button", name="Create channel").click()

    detail = page.locator(".channel-detail")
    await expect(detail.get_by_role("heading", name="Site chat")).to_be_visible()
    channel = (await server.client.get("/api/v1/channels", token="admin")).data[0]
    snippet = await detail.get_by_label("Paste this into your page").input_value()
    assert snippet.startswith(f'<iframe src="{server.url}/webchat?token={channel["publicToken"]}"') and 'title="Ask Support"' in snippet

    preview = detail.get_by_label("Webchat preview")
    await expect(preview.locator(".wc-head")).to_have_text("Ask Support")
    await expect(preview.locator(".wc-bot").first).to_have_text("Hi! How can I help?")
    await preview.get_by_label("Message").fill("Where is my order?")
    await preview.get_by_role("button", name="Send").click()
    answer = preview.locator(".wc-bot").last
    await expect(answer).to_have_attribute("data-status", "done")
    await expect(answer).to_have_text("Hello from the support agent.")
    assert llm.requests[-1]["messages"][-1]["content"] == "Where is my order?"

    await detail.get_by_role("button", name="Check health").click()
    await expect(detail.locator(".health-result")).to_contain_text("Healthy: webchat is served by this server")

    # The page the snippet frames works on its own too.
    chat = await page.context.new_page()
    await chat.goto(f"{server.url}/webchat?token={channel['publicToken']}")
    await expect(chat.locator(".wc-head")).to_have_text("Ask Support")


async def test_a_platform_channel_shows_its_setup_help_webhook_url_and_the_secret_once_and_preflight_names_a_blocked_api(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await admin_env(server, admin, llm, name="Support")
    await open_console(page, server, admin, "#/channels")
    form = page.get_by_role("form", name="New channel")
    await form.get_by_label("Name").fill("Team chat")
    await form.get_by_label("Type").select_option(label="Telegram")
    await expect(form.locator(".platform-help")).to_contain_text("setWebhook")
    await form.get_by_label("Bot token").fill("123456:ABC-DEF")
    await form.get_by_label("API base URL").fill("http://127.0.0.1:9/")
    await form.get_by_role("button", name="Check").click()
    await expect(form.locator(".preflight li.error")).to_contain_text("settings.apiBaseUrl:")
    await form.get_by_label("API base URL").fill("")
    await form.get_by_role("button", name="Create channel").click()
    detail = page.locator(".channel-detail")
    await expect(detail.locator(".webhook-url")).to_contain_text("/api/v1/channels/webhook/im_e?channelId=")
    channel_id = page.url.rsplit("/", 1)[-1]
    await expect(detail.locator(".webhook-url")).to_have_text(f"{server.url}/api/v1/channels/webhook/im_e?channelId={channel_id}")
    secret = await detail.locator(".new-secret").inner_text()
    assert len(secret) >= 32
    await page.reload()
    await expect(detail.get_by_text("set (write-only)").first).to_be_visible()
    assert secret not in await page.content() and "123456:ABC-DEF" not in await page.content()
    await expect(page.locator(".channel-list").first).to_be_visible()
    await expect(page.get_by_role("heading", name="Telegram", exact=True)).to_be_visible()



async def test_conversation_sources_read_as_platform_names(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    await open_console(page, server, admin, "#/approvals")
    await expect(page.locator("main h1").first).to_be_visible()
    labels = await page.evaluate("""async () => {
      const { platformLabels } = await import("/static/app/components/names.js");
      return platformLabels();
    }""")
    # The spec's stand-ins, named as decisions.md maps them (the server's adapters give the labels).
    assert {k: labels[k] for k in ("im_a", "im_b", "im_d", "im_e")} == {
        "im_a": "DingTalk", "im_b": "Discord", "im_d": "Slack", "im_e": "Telegram"}
