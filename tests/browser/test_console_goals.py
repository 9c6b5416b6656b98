"""The Goals page in headless Chromium: set a conversation's goal, pause, resume, complete, and its timeline."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env, toast
from tests.browser.conftest import open_console
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.server import RunningServer


async def test_a_goal_is_set_for_a_conversation_paused_resumed_and_completed_with_its_timeline(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    env = await admin_env(server, admin, llm)
    events = await env.stream("Plan the release", token="admin", conversation_id="release-chat")
    assert events[-1].event == "done"
    await open_console(page, server, admin, "#/goals")
    form = page.get_by_role("form", name="Set a goal")
    await form.get_by_label("Goal").fill("Ship the release notes")
    await form.get_by_label("Criteria").fill("Lists every change\nMentions the upgrade steps")
    await form.get_by_role("button", name="Set goal").click()

    detail = page.locator(".goal-detail")
    await expect(detail.get_by_role("heading", name="Ship the release notes")).to_be_visible()
    await expect(detail.locator(".criteria li")).to_have_text(["Lists every change", "Mentions the upgrade steps"])
    await detail.get_by_role("button", name="Pause").click()
    await toast(page, "Paused")
    await expect(detail.locator(".badge")).to_have_text("paused")
    await detail.get_by_role("button", name="Resume").click()
    await expect(detail.locator(".badge")).to_have_text("active")
    await detail.get_by_role("button", name="Mark complete").click()
    await expect(detail.locator(".badge")).to_have_text("completed")
    await expect(detail.get_by_role("button", name="Pause")).to_have_count(0)
    timeline = detail.locator(".goal-events li")
    await expect(timeline.filter(has_text="→ paused")).to_have_count(1)
    await expect(timeline.filter(has_text="→ completed")).to_have_count(1)
    r = await server.client.get("/api/v1/goals/by-conversation/release-chat", token="admin")
    assert r.status == 200 and r.data is None  # closed: no open goal any more
