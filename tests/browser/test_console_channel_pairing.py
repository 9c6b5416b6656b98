"""The WeChat login on the Channels page against a local iLink backend: the QR code as an image whose status
follows the scan until the channel is logged in (every other platform is set up with its settings instead)."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env, toast  # noqa: E402
from tests.browser.conftest import open_console  # noqa: E402
from tests.helpers.fake_openai import ScriptedOpenAI  # noqa: E402
from tests.helpers.im_weixin import LocalWeixin  # noqa: E402
from tests.helpers.server import RunningServer  # noqa: E402


@pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))
async def test_the_wechat_login_qr_code_shows_as_an_image_and_its_status_follows_the_scan_until_logged_in(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    env = await admin_env(server, admin, llm)
    weixin = LocalWeixin()
    try:
        r = await server.client.post("/api/v1/channels", {
            "name": "WeChat bot", "channelType": "im_g", "agentId": env.agent_id, "settings": {"apiBaseUrl": weixin.url}},
            token="admin")
        assert r.status == 200, r.body
        await open_console(page, server, admin, f"#/channels/{r.data['id']}")
        pairing = page.locator(".pairing")
        await expect(page.locator(".platform-help")).to_contain_text("scan it with the WeChat app")
        await expect(page.locator(".webhook-url")).to_have_count(0)  # WeChat is long-polled: nothing to paste
        await pairing.get_by_role("button", name="Log in with a QR code").click()
        image = pairing.get_by_role("img", name="QR code to scan with the messaging app")
        await expect(image).to_have_attribute("src", __import__("re").compile(r"^data:image/png;base64,"))
        await expect(pairing.locator(".pairing-status")).to_contain_text("waiting")
        weixin.advance("scaned")
        await expect(pairing.locator(".pairing-status")).to_contain_text("scanned")
        token = weixin.advance("confirmed")
        await expect(pairing.locator(".pairing-status")).to_contain_text("confirmed")
        await toast(page, "Logged in")
        await expect(pairing.locator(".paired-as")).to_have_text("Logged in as bot-id-1@im.bot.")
        assert token and token not in await page.content()
    finally:
        weixin.stop()
