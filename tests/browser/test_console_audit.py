"""The audit log page: filters by actor, action, resource and time, pages, and shows an event's detail."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect

from tests.browser.conftest import ADMIN_PASSWORD, failed_requests, open_console
from tests.helpers.server import RunningServer


async def test_the_audit_log_filters_pages_and_shows_an_events_detail(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    bob = (await server.client.post("/api/v1/auth/users", {"username": "bob", "password": ADMIN_PASSWORD}, token="admin")).data
    await server.client.put(f"/api/v1/workspaces/1/members/{bob['id']}", {"role": "admin"}, token="admin")
    login = await server.client.post("/api/v1/auth/login", {"username": "bob", "password": ADMIN_PASSWORD})
    server.client.tokens["bob"] = login.data["token"]
    for i in range(22):
        r = await server.client.post("/api/v1/agents", {"name": f"Agent {i:02d}"}, token="admin")
        assert r.status == 200
    await server.client.post("/api/v1/agents", {"name": "Bob's agent"}, token="bob")

    failures = failed_requests(page)
    await open_console(page, server, admin, "#/audit")
    table = page.get_by_role("region", name="Audit events")
    await expect(table.locator("tbody tr")).to_have_count(20)
    await expect(page.get_by_text("Page 1 of 2")).to_be_visible()
    await page.get_by_role("button", name="Next").click()
    await expect(page.get_by_text("Page 2 of 2")).to_be_visible()

    await page.get_by_label("Actor").fill("bob")
    await page.get_by_label("Action").select_option("CREATE")
    await page.get_by_label("Resource type").fill("AGENT")
    await page.get_by_role("button", name="Filter").click()
    await expect(table.locator("tbody tr")).to_have_count(1)
    await expect(table.get_by_role("cell", name="bob", exact=True)).to_be_visible()
    await table.get_by_role("button", name="Details of event").click()
    detail = page.get_by_role("dialog", name="Audit event")
    await expect(detail).to_contain_text("Bob's agent")
    await expect(detail).to_contain_text(f"user {bob['id']}")
    await detail.get_by_role("button", name="Close").click()

    await page.get_by_label("To", exact=True).fill("2000-01-01T00:00")
    await page.get_by_role("button", name="Filter").click()
    await expect(page.get_by_text("No event matches these filters.")).to_be_visible()
    await page.get_by_role("button", name="Clear").click()
    await expect(page.get_by_text("Page 1 of 2")).to_be_visible()
    assert failures == []
