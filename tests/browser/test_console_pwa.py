"""The console installed as an app: its service worker keeps the shell, so a start without the server
shows the console and says it is offline, and no API answer is ever kept on the device."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import open_console
from tests.helpers.server import RunningServer

pytestmark = pytest.mark.service_workers

CACHED_URLS = """async () => {
  const urls = [];
  for (const name of await caches.keys()) {
    const cache = await caches.open(name);
    for (const request of await cache.keys()) urls.push(new URL(request.url).pathname);
  }
  return urls;
}"""


async def test_the_app_starts_offline_from_its_shell_and_says_so(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    await open_console(page, server, admin, "#/chat")
    await expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    assert await page.evaluate("async () => { await navigator.serviceWorker.ready; return true; }")
    await page.wait_for_function("() => navigator.serviceWorker.controller !== null")
    await page.wait_for_function(f"async () => ({CACHED_URLS})().then((u) => u.includes('/static/app/main.js'))")
    await expect(page.locator(".offline-banner")).to_be_hidden()

    server._server.stop()  # the server goes away: the phone left the LAN
    await server._server.close_all_connections()
    await page.reload()
    await expect(page.locator(".offline-banner")).to_be_visible()
    await expect(page.locator(".offline-banner")).to_contain_text("Offline")
    await expect(page.get_by_role("navigation", name="Main")).to_be_visible()  # the shell came from the device
    cached = await page.evaluate(CACHED_URLS)
    assert "/" in cached and "/static/app/main.js" in cached
    assert not [u for u in cached if u.startswith("/api")], cached  # answers are never kept
