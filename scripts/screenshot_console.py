#!/usr/bin/env python3
"""Take docs/console/<page>-1280.png and <page>-390.png: each console page with a seeded platform.

Usage: .venv/bin/python scripts/screenshot_console.py [--dark] [--out DIR] [page ...]
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
from tests.helpers.console_seed import seed_console  # noqa: E402
from tests.helpers.fake_openai import ScriptedOpenAI  # noqa: E402
from tests.helpers.server import start_server  # noqa: E402

# page file name -> (route, heading to wait for)
PAGES = {
    "dashboard": ("dashboard", "Home"),
    "chat": ("chat/c-trip", "Plan a weekend in Lisbon"),
    "approvals": ("approvals", "Approvals"),
    "security": ("security/rules", "Security"),
    "audit": ("audit", "Audit log"),
    "settings": ("settings", "Settings"),
    "people": ("people", "People and workspaces"),
    "usage": ("usage", "Usage"),
    "providers": ("providers", "Provider settings"),
}
SIZES = ((1280, 800), (390, 844))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "console"))
    parser.add_argument("pages", nargs="*", default=list(PAGES))
    ns = parser.parse_args()

    server = await start_server(tempfile.mkdtemp(prefix="shot-") + "/data")
    llm = ScriptedOpenAI(models=["qwen2.5-7b-instruct"], default_delay_s=0.0)
    await llm.start()
    try:
        seeded = await seed_console(server, llm)
        login = seeded["login"]
        user = {k: login.get(k) for k in ("id", "username", "nickname", "role")}
        os.makedirs(ns.out, exist_ok=True)
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for width, height in SIZES:
                ctx = await browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1,
                                                color_scheme="dark" if ns.dark else "light")
                page = await ctx.new_page()
                await page.goto(server.url + "/static/app/style.css")
                await page.evaluate("([t, u]) => { localStorage.setItem('ap.token', t); localStorage.setItem('ap.user', JSON.stringify(u)); }",
                                    [login["token"], user])
                for name in ns.pages:
                    route, heading = PAGES[name]
                    await page.goto(f"{server.url}/#/{route}")
                    await page.get_by_role("heading", name=heading, exact=True).first.wait_for()
                    await page.wait_for_load_state("networkidle")
                    await page.mouse.move(0, 0)
                    await page.wait_for_timeout(250)
                    path = os.path.join(ns.out, f"{name}-{width}.png")
                    await page.screenshot(path=path)
                    print(f"wrote {path}")
                await ctx.close()
            await browser.close()
    finally:
        await llm.stop()
        await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
