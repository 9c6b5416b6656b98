"""A walk over every console page at desktop and phone width: no 4xx answer, no script error, nothing sideways."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect

from tests.browser.conftest import failed_requests, open_console
from tests.helpers.console_seed import PASSWORD, seed_console
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.server import RunningServer

PAGES = [
    ("dashboard", "Home"), ("chat/c-trip", "Plan a weekend in Lisbon"), ("approvals", "Approvals"), ("agents", "Agents"),
    ("models", "Models"), ("providers", "Provider settings"), ("usage", "Usage"), ("audit", "Audit log"),
    ("security/rules", "Security"), ("security/config", "Security"), ("security/grants", "Security"),
    ("security/events", "Security"), ("people", "People and workspaces"), ("settings", "Settings"), ("account", "Account"),
]


pytestmark = pytest.mark.llm_models("qwen2.5-7b-instruct")


@pytest.mark.parametrize("width", [1280, 390])
async def test_every_page_loads_without_4xx_errors_or_sideways_scrolling(
    browser_context: Any, server: RunningServer, llm: ScriptedOpenAI, width: int
) -> None:
    seeded = await seed_console(server, llm)
    page = await browser_context.new_page()
    await page.set_viewport_size({"width": width, "height": 844})
    failures = failed_requests(page)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await open_console(page, server, seeded["login"], "#/dashboard")
    for path, heading in PAGES:
        await page.goto(f"{server.url}/#/{path}")
        await expect(page.get_by_role("heading", name=heading, exact=True).first).to_be_visible()
        await page.wait_for_load_state("networkidle")
        overflow = await page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= width, f"#/{path} is {overflow}px wide at {width}px"
        if width == 390:  # the sidebar is a drawer; the menu button opens it and a link closes it
            await page.get_by_role("button", name="Menu").click()
            await expect(page.get_by_role("navigation", name="Main")).to_be_visible()
            await page.get_by_role("navigation", name="Main").get_by_role("link", name="Home").click()
            await expect(page.get_by_role("navigation", name="Main")).to_be_hidden()
    assert failures == []
    assert errors == []


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("who", ["ada", "bob", "carol"])
async def test_an_admin_a_member_and_a_viewer_walk_every_page_they_are_shown_without_a_4xx_or_console_error(
    browser_context: Any, server: RunningServer, llm: ScriptedOpenAI, who: str, width: int
) -> None:
    seeded = await seed_console(server, llm)
    login = seeded["login"] if who == "ada" else (await server.client.post("/api/v1/auth/login", {"username": who, "password": PASSWORD})).data
    page = await browser_context.new_page()
    await page.set_viewport_size({"width": width, "height": 844})
    failures = failed_requests(page)
    errors: list[str] = []
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(f"{msg.type}: {msg.text}") if msg.type == "error" else None)
    await open_console(page, server, login, "#/dashboard")
    await expect(page.locator("main h1").first).to_be_visible()
    shown = await page.locator("nav[aria-label='Main'] a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    admin_pages = {"#/settings", "#/audit", "#/security"}
    if who == "ada":  # the global admin (first-run setup) is shown every page, and walks every tab and a conversation too
        assert admin_pages <= set(shown), shown
        shown += [f"#/{path}" for path, _ in PAGES if f"#/{path}" not in shown]
    else:
        assert not admin_pages & set(shown), shown
        assert ("#/providers" in shown) == (who == "bob")  # a viewer may not reorder providers
    assert len(shown) >= 15, shown  # every page the role may use, the build pages included
    for href in shown:
        await page.goto(f"{server.url}/{href}")
        await expect(page.locator("main h1").first).to_be_visible()
        await page.wait_for_load_state("networkidle")
        overflow = await page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= width, f"{href} is {overflow}px wide at {width}px"
    assert failures == []
    assert errors == []
