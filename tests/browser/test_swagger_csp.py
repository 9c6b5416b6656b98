"""The Swagger page renders under its Content-Security-Policy header (no blocked script or style)."""
from __future__ import annotations

from typing import Any

from tests.helpers.server import RunningServer


async def test_the_swagger_page_renders_the_api_under_its_csp(browser_context: Any, server: RunningServer) -> None:
    page = await browser_context.new_page()
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    response = await page.goto(server.url + "/swagger-ui.html")
    assert response is not None and "frame-ancestors 'none'" in response.headers["content-security-policy"]
    await page.wait_for_selector(".swagger-ui .info .title", timeout=20_000)
    assert await page.locator(".opblock").count() > 0
    assert violations == []
