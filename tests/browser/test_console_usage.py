"""The usage page: tokens per day as a chart, grouped by model, agent and user with a table; CSV download."""
from __future__ import annotations

import csv
import io
from pathlib import Path
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


async def test_usage_groups_by_model_agent_and_user_and_downloads_csv(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(server.client, llm.url, token="admin")
    scout = await make_agent(server.client, token="admin", name="Scout")
    scribe = await make_agent(server.client, token="admin", name="Scribe")
    for agent, cid in ((scout, "c-1"), (scout, "c-2"), (scribe, "c-3")):
        llm.enqueue(Script(text="A short scripted answer for usage"))
        await server.client.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": cid, "message": "hello"}, token="admin")
    usage = (await server.client.get("/api/v1/token-usage", token="admin", params={"groupBy": "agent"})).data
    per_agent = {i["agentId"]: i["totalTokens"] for i in usage["items"]}
    total = usage["total"]["totalTokens"]
    assert total > 0 and per_agent[scout] > per_agent[scribe] > 0

    failures = failed_requests(page)
    await open_console(page, server, admin, "#/usage")
    await expect(page.locator("[data-stat='Total tokens'] .value")).to_have_text(f"{total:,}")
    await expect(page.locator("figure.chart canvas").first).to_be_visible()
    table = page.get_by_role("region", name="Usage by model")
    await expect(table.get_by_role("cell", name="scripted", exact=True)).to_be_visible()

    await page.get_by_role("tab", name="Agent").click()
    agents = page.get_by_role("region", name="Usage by agent")
    await expect(agents.locator("tbody tr").first.locator("td").first).to_have_text("Scout")
    await expect(agents.locator("tr", has_text="Scribe")).to_contain_text(f"{per_agent[scribe]:,}")

    async with page.expect_download() as download:
        await page.get_by_role("button", name="Download CSV").click()
    saved = await (await download.value).path()
    rows = list(csv.reader(io.StringIO(Path(saved).read_text(encoding="utf-8"))))
    assert rows[0] == ["Agent", "calls", "promptTokens", "completionTokens", "totalTokens"]
    assert {r[0]: int(r[4]) for r in rows[1:]} == {"Scout": per_agent[scout], "Scribe": per_agent[scribe]}

    await page.get_by_role("tab", name="User").click()
    await expect(page.get_by_role("region", name="Usage by user").get_by_role("cell", name="admin", exact=True)).to_be_visible()
    await page.get_by_label("Period").select_option("7")
    await expect(page.get_by_role("region", name="Usage by user").get_by_role("cell", name="admin", exact=True)).to_be_visible()
    assert failures == []
