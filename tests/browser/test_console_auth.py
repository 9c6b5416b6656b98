"""The console's first run, login, logout and silent token renewal, in headless Chromium."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import ADMIN_PASSWORD, open_console
from tests.helpers.server import RunningServer


async def test_first_run_shows_setup_and_creates_the_admin(page: Any, server: RunningServer) -> None:
    await open_console(page, server)
    await expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    await page.get_by_label("Admin username").fill("root")
    await page.get_by_label("Display name").fill("Root <b>User</b>")
    await page.get_by_label("Password (at least 8 characters)").fill("s3cret-pass")
    await page.get_by_label("Repeat password").fill("s3cret-pass")
    await page.get_by_role("button", name="Create admin account").click()

    await expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    await expect(page.locator(".who")).to_have_text("Root <b>User</b>")  # shown as text, not markup
    status = await server.client.get("/api/v1/setup/status")
    assert status.data["hasAdmin"] is True
    login = await server.client.post("/api/v1/auth/login", {"username": "root", "password": "s3cret-pass"})
    assert login.status == 200


async def test_setup_refuses_mismatched_passwords_without_calling_the_server(page: Any, server: RunningServer) -> None:
    await open_console(page, server)
    await page.get_by_label("Password (at least 8 characters)").fill("s3cret-pass")
    await page.get_by_label("Repeat password").fill("other-pass")
    await page.get_by_role("button", name="Create admin account").click()
    await expect(page.get_by_role("alert")).to_have_text("The passwords do not match")
    assert (await server.client.get("/api/v1/setup/status")).data["hasAdmin"] is False


async def test_login_with_a_wrong_password_then_the_right_one_and_logout(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    await open_console(page, server)
    await expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    await page.get_by_label("Username").fill("admin")
    await page.get_by_label("Password").fill("wrong-password")
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("alert")).to_contain_text("Invalid username or password")

    await page.get_by_label("Password").fill(ADMIN_PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Agents")).to_be_visible()
    token = await page.evaluate("localStorage.getItem('ap.token')")
    assert token and token.startswith("eyJ")

    await page.reload()
    await expect(page.get_by_role("button", name="Log out")).to_be_visible()
    await page.get_by_role("button", name="Log out").click()
    await expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    assert await page.evaluate("localStorage.getItem('ap.token')") is None


async def test_an_invalid_stored_token_leads_back_to_login(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    await open_console(page, server, {**admin, "token": "eyJbogus"})
    await expect(page.get_by_role("heading", name="Log in")).to_be_visible()


@pytest.mark.config(jwt_renew_threshold_ms=86_400_000 * 2)
async def test_a_token_sent_in_x_new_token_replaces_the_stored_one(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    # The server renews on every call here. Tokens minted in the same second are identical, so every
    # answer's X-New-Token is swapped for a different valid token (a PAT) to prove the console takes it.
    pat = (await server.client.post("/api/v1/auth/tokens", {"name": "swap"}, token="admin")).data["token"]
    renewed: list[str] = []

    async def swap(route: Any) -> None:
        response = await route.fetch()
        if response.headers.get("x-new-token"):
            renewed.append(response.headers["x-new-token"])
            await route.fulfill(response=response, headers={**response.headers, "x-new-token": pat})
        else:
            await route.fulfill(response=response)

    await page.route("**/api/v1/**", swap)
    await open_console(page, server, admin, "#/account")
    await page.wait_for_function("t => localStorage.getItem('ap.token') === t", arg=pat)
    assert renewed and all(t.startswith("eyJ") for t in renewed)
    await page.unroute_all(behavior="wait")
    await page.reload()
    await expect(page.get_by_role("cell", name="swap", exact=True)).to_be_visible()
    last_used = page.locator("tr", has=page.get_by_role("cell", name="swap", exact=True)).locator("td").nth(4)
    await expect(last_used).not_to_have_text("—")  # the console's calls now authenticate with the PAT


async def test_first_run_takes_the_browsers_time_zone_and_language(browser_context: Any, server: RunningServer) -> None:
    context = await browser_context.browser.new_context(timezone_id="Asia/Tokyo", locale="zh-CN")
    try:
        page = await context.new_page()
        await open_console(page, server)
        await expect(page.get_by_label("Time zone (schedules and dates use it)")).to_have_value("Asia/Tokyo")
        await expect(page.get_by_label("Language")).to_have_value("zh-CN")
        await page.get_by_label("Password (at least 8 characters)").fill("s3cret-pass")
        await page.get_by_label("Repeat password").fill("s3cret-pass")
        await page.get_by_role("button", name="Create admin account").click()
        await expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    finally:
        await context.close()
    assert (await server.client.get("/api/v1/settings/language")).data == "zh-CN"
    login = await server.client.post("/api/v1/auth/login", {"username": "admin", "password": "s3cret-pass"})
    settings = await server.client.get("/api/v1/settings", token=login.data["token"])
    assert settings.data["timezone"] == "Asia/Tokyo"
