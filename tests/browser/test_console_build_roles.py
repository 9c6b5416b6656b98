"""The build pages as a workspace viewer and as a member: nothing they may not read is asked for (no 4xx),
and no console error; write buttons a viewer may not use are not offered where the page knows."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import failed_requests, open_console
from tests.browser.test_console_build_walk import pages, seed
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.server import PASSWORD, RunningServer


@pytest.mark.parametrize("role", ["viewer", "member"])
async def test_a_viewer_and_a_member_walk_every_build_page_without_a_refused_request(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI, role: str
) -> None:
    ids = await seed(server, admin, llm)
    api = server.client
    r = await api.post("/api/v1/auth/users", {"username": "vic", "password": PASSWORD}, token="admin")
    assert r.status == 200, r.body
    r = await api.put(f"/api/v1/workspaces/1/members/{r.data['id']}", {"role": role}, token="admin")
    assert r.status == 200, r.body
    r = await api.post("/api/v1/auth/login", {"username": "vic", "password": PASSWORD})
    login = r.data
    failures = failed_requests(page)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.text} {m.location.get('url', '')}")
            if m.type == "error" and "favicon.ico" not in m.location.get("url", "") else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    await open_console(page, server, login, "#/skills")
    await expect(page.get_by_role("heading", name="Skills", exact=True)).to_be_visible()
    seen = []
    for name, hash_ in pages(ids):
        if name in ("memory-files", "memory-dreams", "goals", "data-files"):
            continue  # the admin's own memory, goal and conversation: vic has none of them
        await page.evaluate("h => { location.hash = h; }", hash_)
        await expect(page.locator("main h1:visible").first).to_be_visible()
        await expect(page.get_by_text("Loading…")).to_have_count(0)
        await page.wait_for_timeout(300)
        seen.append((hash_, list(failures), list(errors)))
        failures.clear()
        errors.clear()
    bad = [s for s in seen if s[1] or s[2]]
    assert not bad, "\n".join(f"{h}: {f} {e}" for h, f, e in bad)
