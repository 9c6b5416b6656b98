"""Browser tests: Debian's Chromium driven by Playwright in the test's event loop; a screenshot on failure."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, AsyncIterator

import pytest

from tests.helpers.server import RunningServer, drop_first_agent

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
HERE = Path(__file__).resolve().parent

try:
    import playwright.async_api as _pw  # noqa: F401

    HAVE_PLAYWRIGHT = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_PLAYWRIGHT = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test here `browser`; skip them with a clear reason when Chromium or Playwright is missing."""
    reason = None
    if not os.path.exists(CHROMIUM):
        reason = f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)"
    elif not HAVE_PLAYWRIGHT:
        reason = "browser tests need Playwright for Python (pip install playwright; no browser download)"
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
async def browser_context(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """A fresh Chromium context; on failure saves test-artifacts/<test>.png and the console log."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        # Service workers only where a test asks (`@pytest.mark.service_workers`): a worker answering the shell
        # would hide requests from page.route() in the other tests.
        workers = "allow" if request.node.get_closest_marker("service_workers") else "block"
        context = await browser.new_context(viewport={"width": 1280, "height": 800}, service_workers=workers)
        context.set_default_timeout(10_000)
        logs: list[str] = []
        context.on("page", lambda page: _watch(page, logs))
        context.logs = logs  # type: ignore[attr-defined]
        try:
            yield context
        finally:
            rep = getattr(request.node, "rep_call", None)
            if rep is not None and rep.failed:
                ARTIFACTS.mkdir(exist_ok=True)
                name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
                for i, page in enumerate(context.pages):
                    suffix = f"-{i}" if i else ""
                    try:
                        await page.screenshot(path=str(ARTIFACTS / f"{name}{suffix}.png"), full_page=True)
                    except Exception:  # noqa: BLE001 - a closed page must not hide the real failure
                        pass
                (ARTIFACTS / f"{name}.log").write_text("\n".join(logs), encoding="utf-8")
            await context.close()
            await browser.close()


def _watch(page: Any, logs: list[str]) -> None:
    page.on("console", lambda msg: logs.append(f"console.{msg.type}: {msg.text}"))
    page.on("pageerror", lambda exc: logs.append(f"pageerror: {exc}"))


@pytest.fixture
async def page(browser_context: Any) -> Any:
    return await browser_context.new_page()


ADMIN_PASSWORD = "password-123"


@pytest.fixture
async def admin(server: RunningServer) -> dict[str, Any]:
    """The global admin, created through first-run setup; its token is under "admin" in server.client."""
    r = await server.client.post("/api/v1/setup/init", {"username": "admin", "password": ADMIN_PASSWORD, "nickname": "Ada"})
    assert r.status == 200, r.body
    server.client.tokens["admin"] = r.data["token"]
    await drop_first_agent(server.client, "admin")
    return r.data


async def open_console(page: Any, server: RunningServer, login: dict[str, Any] | None = None, path: str = "#/chat") -> None:
    """Open the console, already logged in as `login` (a LoginResponse) when given."""
    if login is not None:
        await page.goto(server.url + "/static/app/style.css")
        user = {k: login.get(k) for k in ("id", "username", "nickname", "role")}
        await page.evaluate(
            "([t, u]) => { localStorage.setItem('ap.token', t); localStorage.setItem('ap.user', JSON.stringify(u)); }",
            [login["token"], user],
        )
    await page.goto(f"{server.url}/{path}")


def failed_requests(page: Any) -> list[str]:
    """Collects "STATUS METHOD URL" of every API answer with status 400 or more (a normal walk expects none)."""
    failures: list[str] = []

    def check(response: Any) -> None:
        if "/api/" in response.url and response.status >= 400:
            failures.append(f"{response.status} {response.request.method} {response.url}")

    page.on("response", check)
    return failures
