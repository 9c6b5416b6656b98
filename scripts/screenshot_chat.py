#!/usr/bin/env python3
"""Take docs/screenshot-chat.png: the console's chat view with a scripted model, in headless Chromium.

Usage: .venv/bin/python scripts/screenshot_chat.py [--dark] [--out PATH]
Needs Debian's /usr/bin/chromium and Playwright for Python (no browser download).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from playwright.async_api import async_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.helpers.chat import make_agent  # noqa: E402
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall  # noqa: E402
from tests.helpers.models import use_fake_openai  # noqa: E402
from tests.helpers.server import start_server  # noqa: E402

ANSWER = """Here is a small script that prints the time in a few cities:

```python
from datetime import datetime
from zoneinfo import ZoneInfo

for city in ("Europe/Paris", "Asia/Tokyo", "America/New_York"):
    print(f"{city:20} {datetime.now(ZoneInfo(city)):%H:%M}")
```

| City | Offset |
|---|---|
| Paris | UTC+1 |
| Tokyo | UTC+9 |

Run it with **Python 3.9+**; `zoneinfo` is in the standard library."""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "screenshot-chat.png"))
    ns = parser.parse_args()

    server = await start_server(tempfile.mkdtemp(prefix="shot-") + "/data")
    llm = ScriptedOpenAI(models=["scripted"], default_delay_s=0.01)
    await llm.start()
    try:
        r = await server.client.post("/api/v1/setup/init", {"username": "ada", "password": "password-123", "nickname": "Ada"})
        login = r.data
        server.client.tokens["ada"] = login["token"]
        await use_fake_openai(server.client, llm.url, token="ada", provider_id="lan-llm", model="qwen2.5-7b-instruct")
        tools = getattr(server.platform.services, "tools", None) is not None
        agent = await make_agent(server.client, token="ada", name="Assistant", icon="🦉")
        if tools:
            await server.client.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["get_current_time"]}, token="ada")
        await make_agent(server.client, token="ada", name="Researcher", icon="🔬")
        for cid, text in (("c-trip", "Plan a weekend in Lisbon"), ("c-sql", "Explain this SQL query")):
            llm.enqueue(Script(text="Sure."))
            await server.client.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": cid, "message": text}, token="ada")
        await server.client.put("/api/v1/conversations/c-trip/pin", {"pinned": True}, token="ada")
        scripts = [Script(reasoning="The user wants the current time in several cities, then a script.", text="", tool_calls=[
            ScriptedToolCall("get_current_time", {"timezone": "Asia/Tokyo"})])] if tools else []
        scripts.append(Script(reasoning="Tokyo is UTC+9; now write the snippet.", text=ANSWER))
        llm.enqueue(*scripts)

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            ctx = await browser.new_context(viewport={"width": 1280, "height": 940}, device_scale_factor=1,
                                            color_scheme="dark" if ns.dark else "light")
            page = await ctx.new_page()
            await page.goto(server.url + "/#/chat")  # the login keeps the route
            await page.get_by_label("Username").fill("ada")
            await page.get_by_label("Password").fill("password-123")
            await page.get_by_role("button", name="Log in").click()
            await page.get_by_label("Agent", exact=True).select_option(agent)
            box = page.get_by_label("Message", exact=True)
            await box.fill("What time is it in Tokyo? Show me a world clock.")
            await box.press("Enter")
            await page.locator(".msg.assistant[data-status=completed]").wait_for()
            if tools:
                await page.locator(".tool-card summary").first.click()
            await page.mouse.move(0, 0)
            await page.wait_for_timeout(300)
            os.makedirs(os.path.dirname(ns.out), exist_ok=True)
            await page.screenshot(path=ns.out)
            await browser.close()
        print(f"wrote {ns.out}")
    finally:
        await llm.stop()
        await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
