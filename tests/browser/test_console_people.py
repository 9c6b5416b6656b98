"""People and workspaces in the console: users (create, disable, role, password, tokens), workspaces, members."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect

from tests.browser.conftest import ADMIN_PASSWORD, failed_requests, open_console
from tests.helpers.server import RunningServer


async def test_an_admin_creates_disables_promotes_and_resets_a_user_and_revokes_their_token(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    failures = failed_requests(page)
    await open_console(page, server, admin, "#/people")
    users = page.get_by_role("region", name="Users")
    await users.get_by_role("button", name="+ New user").click()
    dialog = page.get_by_role("dialog", name="New user")
    await dialog.get_by_label("Username").fill("erin")
    await dialog.get_by_label("Password").fill("short")
    await dialog.get_by_role("button", name="Create user").click()
    await expect(dialog.get_by_label("Password")).to_have_attribute("aria-invalid", "true")
    await expect(dialog.locator(".field-error")).to_contain_text("at least 8")
    failures.clear()  # that 400 was the point
    await dialog.get_by_label("Password").fill("erin-pass-1")
    await dialog.get_by_role("button", name="Create user").click()
    await expect(users.get_by_role("cell", name="erin", exact=True)).to_be_visible()

    erin = next(u for u in (await server.client.get("/api/v1/auth/users", token="admin")).data if u["username"] == "erin")
    login = await server.client.post("/api/v1/auth/login", {"username": "erin", "password": "erin-pass-1"})
    server.client.tokens["erin"] = login.data["token"]
    pat = (await server.client.post("/api/v1/auth/tokens", {"name": "erin's cli"}, token="erin")).data["token"]

    await users.get_by_role("button", name="Disable erin").click()
    await page.get_by_role("dialog", name="Disable erin?").get_by_role("button", name="Disable").click()
    await expect(users.get_by_role("button", name="Enable erin")).to_be_visible()
    assert (await server.client.get("/api/v1/workspaces", token=pat)).status == 401
    await users.get_by_role("button", name="Enable erin").click()
    await expect(users.get_by_role("button", name="Disable erin")).to_be_visible()
    assert (await server.client.get("/api/v1/workspaces", token=pat)).status == 200

    await users.get_by_label("Global role of erin").select_option("admin")
    await expect(page.get_by_text("erin is now a global admin")).to_be_visible()
    assert (await server.client.get("/api/v1/auth/users", token=pat)).status == 200

    await users.get_by_role("button", name="Tokens of erin").click()
    tokens = page.get_by_role("dialog", name="Tokens of erin")
    await tokens.get_by_role("button", name="Revoke erin's cli").click()
    await page.get_by_role("dialog", name="Revoke erin's cli?").get_by_role("button", name="Revoke").click()
    await expect(tokens.get_by_text("No personal access tokens.")).to_be_visible()
    assert (await server.client.get("/api/v1/workspaces", token=pat)).status == 401
    await page.keyboard.press("Escape")
    await expect(tokens).to_have_count(0)
    await users.get_by_role("button", name="Reset the password of erin").click()
    reset = page.get_by_role("dialog", name="Reset the password of erin")
    await reset.get_by_label("New password").fill("erin-pass-2")
    await reset.get_by_role("button", name="Set password").click()
    await expect(page.get_by_text("New password set for erin")).to_be_visible()
    assert (await server.client.post("/api/v1/auth/login", {"username": "erin", "password": "erin-pass-2"})).status == 200

    assert erin["enabled"] is True
    assert failures == []


async def test_workspaces_are_created_renamed_switched_and_deleted_with_confirmation(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    failures = failed_requests(page)
    await open_console(page, server, admin, "#/people")
    spaces = page.get_by_role("region", name="Workspaces")
    await spaces.get_by_label("New workspace").fill("Lab")
    await spaces.get_by_role("button", name="Create workspace").click()
    await expect(spaces.get_by_role("cell", name="Lab", exact=True)).to_be_visible()
    await spaces.get_by_role("button", name="Rename Lab").click()
    await page.get_by_role("dialog", name="Rename Lab").get_by_label("Name").fill("Garage lab")
    await page.get_by_role("dialog", name="Rename Lab").get_by_role("button", name="Save").click()
    await expect(spaces.get_by_role("cell", name="Garage lab", exact=True)).to_be_visible()

    await spaces.get_by_role("button", name="Switch to Garage lab").click()
    await expect(page.get_by_role("heading", name="Members of Garage lab")).to_be_visible()
    lab = await page.evaluate("localStorage.getItem('ap.workspace')")
    await expect(page.get_by_label("Workspace", exact=True)).to_have_value(lab)
    assert lab != "1"

    await spaces.get_by_role("button", name="Delete Garage lab").click()
    confirm = page.get_by_role("dialog", name="Delete Garage lab?")
    await confirm.get_by_role("button", name="Cancel").click()
    assert (await server.client.get(f"/api/v1/workspaces/{lab}", token="admin")).status == 200
    await spaces.get_by_role("button", name="Delete Garage lab").click()
    await confirm.get_by_role("button", name="Delete workspace").click()
    await expect(spaces.get_by_role("cell", name="Garage lab", exact=True)).to_have_count(0)
    assert (await server.client.get(f"/api/v1/workspaces/{lab}", token="admin")).status == 404
    await expect(page.get_by_role("heading", name="Members of Default")).to_be_visible()
    assert failures == []


async def test_a_member_logs_in_and_sees_no_admin_pages_or_buttons(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    r = await server.client.post("/api/v1/auth/users", {"username": "bob", "password": ADMIN_PASSWORD}, token="admin")
    assert r.status == 200
    failures = failed_requests(page)
    await open_console(page, server)
    await page.get_by_label("Username").fill("bob")
    await page.get_by_label("Password").fill(ADMIN_PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    nav = page.get_by_role("navigation", name="Main")
    await expect(nav.get_by_role("link", name="Home")).to_be_visible()
    for hidden in ("Audit log", "Security", "Settings"):
        await expect(nav.get_by_role("link", name=hidden, exact=True)).to_have_count(0)
    await nav.get_by_role("link", name="People").click()
    await expect(page.get_by_role("heading", name="Members of Default")).to_be_visible()
    await expect(page.get_by_role("region", name="Users")).to_have_count(0)
    members = page.get_by_role("region", name="Members")
    await expect(members.get_by_role("cell", name="bob", exact=True)).to_be_visible()
    await expect(members.get_by_role("combobox")).to_have_count(0)
    await expect(members.get_by_role("button")).to_have_count(0)
    await expect(page.get_by_role("button", name="Rename Default workspace")).to_have_count(0)

    await page.goto(server.url + "/#/audit")
    await expect(page.get_by_text("This page is for workspace admins and above.")).to_be_visible()
    await page.goto(server.url + "/#/dashboard")
    await expect(page.locator("[data-stat='Tool calls (24 h)'] .value")).to_have_text("—")
    await expect(page.get_by_role("region", name="Running turns")).to_have_count(0)
    assert failures == []
