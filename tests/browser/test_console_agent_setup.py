"""The agent detail in headless Chromium: one agent's skills, tools, knowledge bases, memory, channels and cron jobs."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env, bound, toast
from tests.browser.conftest import open_console
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.memory import fact, summarize
from tests.helpers.server import RunningServer


async def test_the_agent_detail_binds_skills_and_tools_and_lists_its_memory_channels_and_cron_jobs(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    env = await admin_env(server, admin, llm, name="Concierge")
    api = server.client
    await summarize(env, [fact("hotel", "Prefers quiet rooms")], token="admin")
    r = await api.post("/api/v1/cron-jobs", {"name": "Daily digest", "agentId": env.agent_id, "cronExpression": "0 8 * * *",
                                             "timezone": "UTC", "message": "digest"}, token="admin")
    assert r.status == 200, r.body
    r = await api.post("/api/v1/channels", {"name": "Lobby chat", "channelType": "webchat", "agentId": env.agent_id}, token="admin")
    assert r.status == 200, r.body

    await open_console(page, server, admin, "#/agents")
    await page.get_by_role("link", name="Setup of Concierge").click()
    setup = page.locator(".agent-setup")
    await expect(setup.get_by_role("heading", name="Concierge")).to_be_visible()
    await setup.locator("li[data-skill='web-research']").get_by_role("switch").check()
    await toast(page, "Bound web-research")
    assert len(await bound(server, env.agent_id, "skills")) == 1

    await setup.get_by_role("link", name="Tools").click()
    await setup.get_by_role("switch", name="Use get_current_time").check()
    await toast(page, "Added get_current_time")
    assert "get_current_time" in await bound(server, env.agent_id)

    await setup.get_by_role("link", name="Memory").click()
    await expect(setup.locator("li[data-fact='hotel']")).to_contain_text("Prefers quiet rooms")
    await setup.get_by_role("link", name="Channels").click()
    await expect(setup.get_by_role("link", name="Lobby chat")).to_be_visible()
    await setup.get_by_role("link", name="Cron jobs").click()
    await expect(setup.get_by_role("link", name="Daily digest")).to_be_visible()
    await setup.get_by_role("link", name="All agents").click()
    await expect(page.get_by_role("link", name="Setup of Concierge")).to_be_visible()
    await expect(setup).to_be_hidden()
