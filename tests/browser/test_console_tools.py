"""The Tools page in headless Chromium: built-in tools with guard severity, an MCP server added over stdio, plugins."""
from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import bound
from tests.browser.conftest import open_console
from tests.helpers.chat import make_agent
from tests.helpers.server import RunningServer
from tests.test_mcp import SERVER_SCRIPT


async def test_an_mcp_server_added_over_stdio_shows_its_tools_and_can_be_enabled_for_an_agent(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    agent = await make_agent(server.client, token="admin", name="Builder")
    r = await server.client.put("/api/v1/workspaces/1", {"hostTools": ["mcp_stdio"]}, token="admin")  # bindable here
    assert r.status == 200, r.body
    await open_console(page, server, admin, "#/tools/mcp")
    await page.get_by_role("button", name="+ Add server").click()
    form = page.get_by_role("form", name="Add an MCP server")
    await form.get_by_label("Name (slug)").fill("local")
    await form.get_by_label("Command", exact=True).fill(sys.executable)
    await form.get_by_label("Arguments").fill(f"{SERVER_SCRIPT}\nstdio")
    await form.get_by_label("Environment").fill("PROBE_TOKEN=stdio-secret-value")
    await form.get_by_role("button", name="Add and connect").click()

    detail = page.locator(".mcp-detail")
    await expect(detail.get_by_role("heading", name="local")).to_be_visible(timeout=30_000)
    tools = detail.locator(".mcp-tools li")
    await expect(tools.filter(has_text="text.echo")).to_contain_text("Echo the text back.")
    await expect(tools).to_have_count(5)
    await expect(page.locator(".server-list li[data-server='local']")).to_contain_text("connected")
    assert "stdio-secret-value" not in await page.content()

    await detail.get_by_role("button", name="Test connection").click()
    await expect(detail.locator(".test-result")).to_contain_text("Connected to test-mcp: 5 tools", timeout=30_000)

    await detail.get_by_role("switch", name="Use in Builder").check()
    await expect(page.locator(".toast").filter(has_text="Enabled for Builder")).to_be_visible()
    names = await bound(server, agent)
    assert "mcp__local__add" in names and len([t for t in names if t.startswith("mcp__local__")]) == 5


@pytest.mark.config(shell_exec_enabled=True)  # the server allows the shell; the workspace decides
async def test_built_in_tools_show_their_guard_severity_and_a_plugin_is_enabled_with_its_settings(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    await open_console(page, server, admin, "#/tools/builtin")
    row = page.locator("tr[data-tool='write_file']")
    await expect(row).to_contain_text("high")
    await expect(row).to_contain_text("ask")
    await row.get_by_role("switch", name="Enable write_file").uncheck()
    await expect(page.locator(".toast").filter(has_text="Disabled")).to_be_visible()
    tools = (await server.client.get("/api/v1/tools", token="admin")).data
    assert next(t for t in tools if t["name"] == "write_file")["enabled"] is False
    shell = page.locator("tr[data-tool='shell_exec']")
    await expect(shell.locator(".host-off")).to_contain_text("Not enabled in this workspace")  # no global admin enabled it
    assert await row.locator(".host-off").count() == 0
    # the server would refuse it here: not shown as Enabled, and not switchable on
    await expect(shell.get_by_role("switch", name="Enable shell_exec")).not_to_be_checked()
    await expect(shell.get_by_role("switch", name="Enable shell_exec")).to_be_disabled()
    r = await server.client.put("/api/v1/workspaces/1", {"hostTools": ["shell"]}, token="admin")
    assert r.status == 200, r.body
    await page.reload()
    await expect(shell.get_by_role("switch", name="Enable shell_exec")).to_be_checked()
    await expect(shell.locator(".host-off")).to_have_count(0)

    await page.get_by_role("link", name="Plugins").click()
    plugin = page.get_by_role("region", name="Plugin calculator")
    # The toggle reloads the plugin list. The setting is typed right after the toggle, while that reload is
    # held in flight; the reload then lands and re-renders the form, and what was typed must still be saved.
    reload_held = asyncio.Event()
    held: list[Any] = []

    async def hold(route: Any) -> None:
        held.append(route)
        reload_held.set()

    switch = plugin.get_by_role("switch", name="Enable plugin calculator")
    await expect(switch).to_be_visible()  # the list's first load has landed
    await page.route("**/api/v1/plugins", hold)
    await switch.check()
    await plugin.get_by_label("precision").fill("4")
    await asyncio.wait_for(reload_held.wait(), 10)
    async with page.expect_response(lambda r: r.url.endswith("/api/v1/plugins") and r.request.method == "GET"):
        for route in held:
            await route.continue_()
    await page.unroute("**/api/v1/plugins")
    await page.wait_for_load_state("networkidle")  # the reloaded list has re-rendered the form
    await expect(plugin.get_by_label("precision")).to_have_value("4")
    await plugin.get_by_role("button", name="Save settings").click()
    await expect(page.locator(".toast").filter(has_text="Settings saved")).to_be_visible()
    data = (await server.client.get("/api/v1/plugins/calculator", token="admin")).data
    assert data["enabled"] is True and data["config"]["precision"] == 4


async def test_the_acp_tab_tests_an_endpoint_and_chooses_the_agents_that_may_delegate(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    agent = await make_agent(server.client, token="admin", name="Coder")
    r = await server.client.put("/api/v1/workspaces/1", {"hostTools": ["acp"]}, token="admin")  # bindable here
    assert r.status == 200, r.body
    await open_console(page, server, admin, "#/tools/acp")
    endpoint = page.locator("li[data-endpoint='gemini-cli']")
    await endpoint.get_by_role("button", name="Test").click()
    await expect(endpoint.locator(".test-result")).not_to_be_empty()
    await page.get_by_role("switch", name="Use in Coder").check()
    await expect(page.locator(".toast").filter(has_text="Enabled for Coder")).to_be_visible()
    assert await bound(server, agent) == ["acp_delegate"]


async def test_a_bad_mcp_server_name_is_explained_not_shown_as_a_regex(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    r = await server.client.put("/api/v1/workspaces/1", {"hostTools": ["mcp_stdio"]}, token="admin")
    assert r.status == 200, r.body
    await open_console(page, server, admin, "#/tools/mcp")
    await page.get_by_role("button", name="+ Add server").click()
    form = page.get_by_role("form", name="Add an MCP server")
    await form.get_by_label("Name (slug)").fill("my server")
    await form.get_by_label("Command", exact=True).fill(sys.executable)
    await form.get_by_role("button", name="Add and connect").click()
    error = page.locator(".toast-error")
    await expect(error).to_contain_text("name: use up to 24 letters, digits, '_' or '-'")
    assert "pattern" not in await error.inner_text() and "[A-Za-z0-9]" not in await error.inner_text()
