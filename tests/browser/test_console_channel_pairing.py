"""QR pairing on the Channels page against a local gateway: the code as an image whose status follows the scan.

Needs the talk area's pairing routes and fake gateway; skipped until they are in this tree."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")
fake_gateway = pytest.importorskip("tests.helpers.fake_gateway", reason="needs the talk area's pairing (fake gateway)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env, toast  # noqa: E402
from tests.browser.conftest import open_console  # noqa: E402
from tests.helpers.fake_openai import ScriptedOpenAI  # noqa: E402
from tests.helpers.server import RunningServer  # noqa: E402


@pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))
async def test_the_qr_code_shows_as_an_image_and_its_status_follows_the_gateway_until_paired(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    if not any(r.template == "/api/v1/channels/qrcode/{channelType}/begin" for r in server.platform.routes):
        pytest.skip("needs /api/v1/channels/qrcode/{channelType}/begin (talk)")
    env = await admin_env(server, admin, llm)
    gateway = fake_gateway.FakeGateway()
    try:
        r = await server.client.post("/api/v1/channels", {
            "name": "Paired chat", "channelType": "im_h", "agentId": env.agent_id, "replyUrl": gateway.url + "/reply",
            "settings": {"gatewayUrl": gateway.url, "appId": "102000001", "appSecret": "qq-secret"}}, token="admin")
        assert r.status == 200, r.body
        await open_console(page, server, admin, f"#/channels/{r.data['id']}")
        pairing = page.locator(".pairing")
        await pairing.get_by_role("button", name="Pair with a QR code").click()
        image = pairing.get_by_role("img", name="QR code to scan with the messaging app")
        await expect(image).to_have_attribute("src", __import__("re").compile(r"^data:image/png;base64,"))
        await expect(pairing.locator(".pairing-status")).to_contain_text("waiting")
        gateway.advance("scanned")
        await expect(pairing.locator(".pairing-status")).to_contain_text("scanned")
        gateway.advance("confirmed", credentials={"accountId": "bot-42", "token": "paired-token-xyz"})
        await expect(pairing.locator(".pairing-status")).to_contain_text("confirmed")
        await toast(page, "Paired")
        await expect(pairing.locator(".paired-as")).to_have_text("Paired as bot-42.")
        assert "paired-token-xyz" not in await page.content()
    finally:
        gateway.stop()
