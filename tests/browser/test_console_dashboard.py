"""The console's home page: figures, charts, running turns and the provider pool, against the real server."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect

from tests.browser.conftest import failed_requests, open_console
from tests.helpers.chat import make_agent
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer


pytestmark = pytest.mark.llm_models("scripted")


async def test_the_dashboard_chart_shows_the_days_tokens_after_a_chat(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(server.client, llm.url, token="admin", provider_id="lan")
    agent = await make_agent(server.client, token="admin")
    llm.enqueue(Script(text="Hello there from the scripted model"))
    await server.client.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "c-dash", "message": "hi"}, token="admin")
    today = (await server.client.get("/api/v1/dashboard/stats", token="admin")).data["today"]["totalTokens"]
    assert today > 0

    failures = failed_requests(page)
    await open_console(page, server, admin, "#/dashboard")
    await expect(page.get_by_role("heading", name="Home")).to_be_visible()
    await expect(page.locator("[data-stat='Tokens today'] .value")).to_have_text(f"{today:,}")
    await expect(page.get_by_role("region", name="Tokens per model").get_by_role("cell", name="scripted")).to_be_visible()

    chart = page.locator("figure.chart", has_text="Tokens per day")
    box = await chart.locator(".u-over").bounding_box()
    assert box is not None
    await page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)  # today is the last bar
    values = await chart.locator(".u-legend .u-series .u-value").all_inner_texts()
    assert int(values[1].replace(",", "")) == today

    await expect(page.get_by_role("region", name="Running turns")).to_contain_text("No turn is running.")
    pool = page.get_by_role("region", name="Provider pool")
    await pool.get_by_role("button", name="Re-probe lan").click()
    await expect(page.get_by_text("lan: reachable")).to_be_visible()
    assert failures == []


async def test_a_stuck_turn_is_stopped_then_recycled_from_the_dashboard(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(server.client, llm.url, token="admin", provider_id="lan")
    agent = await make_agent(server.client, token="admin")
    llm.enqueue(Script(text="a stuck answer", hang_after_chunks=2))
    failures = failed_requests(page)
    task = asyncio.ensure_future(server.client.sse(
        "POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "c-stuck", "message": "go"}, token="admin"))
    await open_console(page, server, admin, "#/dashboard")
    turns = page.get_by_role("region", name="Running turns")
    await turns.get_by_role("button", name="Stop c-stuck").click()
    await expect(page.get_by_text("Stop requested")).to_be_visible()
    await expect(turns.get_by_role("cell", name="(stopping)")).to_be_visible()
    await turns.get_by_role("button", name="Recycle c-stuck").click()
    await page.get_by_role("dialog", name="Force recycle this turn?").get_by_role("button", name="Recycle").click()
    await expect(page.get_by_text("Turn recycled")).to_be_visible()
    await expect(page.locator("#running-turns")).to_contain_text("No turn is running.", timeout=15_000)
    await asyncio.wait_for(task, 20)
    assert failures == []
