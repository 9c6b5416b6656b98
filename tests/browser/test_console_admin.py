"""Agents, models and account pages of the console, in headless Chromium."""
from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import open_console
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer


@pytest.fixture
async def fake() -> AsyncIterator[ScriptedOpenAI]:
    srv = ScriptedOpenAI(api_key="lan-key", models=["llama-lan", "qwen-lan", "embed-lan"])
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


async def test_adding_an_openai_compatible_server_discovers_models_and_sets_the_default(
    page: Any, server: RunningServer, admin: dict[str, Any], fake: ScriptedOpenAI
) -> None:
    await open_console(page, server, admin, "#/models")
    form = page.locator("form.add-provider")
    await form.get_by_label("Name").fill("LAN box")
    await form.get_by_label("Base URL").fill(fake.url)
    await form.get_by_label("API key (optional)").fill("lan-key")
    await form.get_by_role("button", name="Add and discover models").click()

    dialog = page.get_by_role("dialog", name="Add discovered models")
    await expect(dialog.get_by_text("llama-lan")).to_be_visible()
    await dialog.get_by_role("checkbox").nth(1).uncheck()  # qwen-lan stays out
    await dialog.get_by_role("button", name="Add selected").click()

    card = page.locator("section.provider[data-provider='lan-box']")
    await expect(card.locator("tr[data-model='llama-lan']")).to_be_visible()
    await expect(card.locator("tr[data-model='qwen-lan']")).to_have_count(0)
    await card.get_by_role("button", name="Make llama-lan the default").click()
    await expect(card.locator("tr[data-model='llama-lan']").get_by_text("default")).to_be_visible()

    await card.get_by_role("button", name="Test connection").click()
    await expect(page.get_by_text("LAN box: connection OK")).to_be_visible()
    assert any(r.path.endswith("/chat/completions") for r in fake.request_log)
    assert all(r.headers.get("Authorization") == "Bearer lan-key" for r in fake.request_log)

    active = (await server.client.get("/api/v1/models/active", token="admin")).data["activeLlm"]
    assert (active["provider"], active["modelName"]) == ("lan-box", "llama-lan")
    catalog = (await server.client.get("/api/v1/models/catalog", token="admin")).data
    provider = next(p for p in catalog if p["id"] == "lan-box")
    assert provider["baseUrl"] == fake.url and provider["enabled"] is True


async def test_disabling_and_enabling_a_provider(page: Any, server: RunningServer, admin: dict[str, Any], fake: ScriptedOpenAI) -> None:
    await use_fake_openai(server.client, fake.url, token="admin", provider_id="lan")
    await open_console(page, server, admin, "#/models")
    card = page.locator("section.provider[data-provider='lan']")
    await card.get_by_role("button", name="Disable lan").click()
    await expect(card.get_by_role("button", name="Enable lan")).to_be_visible()
    catalog = (await server.client.get("/api/v1/models/catalog", token="admin")).data
    assert next(p for p in catalog if p["id"] == "lan")["enabled"] is False
    await card.get_by_role("button", name="Enable lan").click()
    await expect(card.get_by_role("button", name="Disable lan")).to_be_visible()


async def test_a_member_sees_the_enabled_models_read_only(page: Any, server: RunningServer, admin: dict[str, Any], fake: ScriptedOpenAI) -> None:
    await use_fake_openai(server.client, fake.url, token="admin", provider_id="lan", model="llama-lan")
    user = (await server.client.post("/api/v1/auth/users", {"username": "bob", "password": "password-456"}, token="admin")).data
    await server.client.put(f"/api/v1/workspaces/1/members/{user['id']}", {"role": "member"}, token="admin")
    login = (await server.client.post("/api/v1/auth/login", {"username": "bob", "password": "password-456"})).data
    await open_console(page, server, login, "#/models")
    listing = page.get_by_role("heading", name="Available models").locator("xpath=..")
    await expect(listing.get_by_role("listitem").filter(has_text="llama-lan")).to_contain_text("lan")
    await expect(listing.get_by_role("listitem").filter(has_text="llama-lan").locator(".badge")).to_have_text("default")
    await expect(page.get_by_text("Only global admins can change providers.")).to_be_visible()
    # Nothing offered that would answer 403: no add form, no provider cards with their buttons.
    assert await page.locator("form.add-provider").count() == 0
    assert await page.get_by_role("button", name="Test connection").count() == 0


async def test_creating_editing_and_deleting_an_agent(page: Any, server: RunningServer, admin: dict[str, Any], fake: ScriptedOpenAI) -> None:
    await use_fake_openai(server.client, fake.url, token="admin", provider_id="lan", model="llama-lan")
    await open_console(page, server, admin, "#/agents")
    await page.get_by_role("button", name="+ New agent").click()
    editor = page.get_by_role("region", name="Agent editor")
    await editor.get_by_label("Name", exact=True).fill("Researcher <img src=x onerror=alert(1)>")
    await editor.get_by_label("Icon (emoji)").fill("🔬")
    await editor.get_by_label("Type").select_option("plan_execute")
    await editor.get_by_label("Model", exact=True).select_option(label="llama-lan · lan")
    await editor.get_by_label("Thinking level").select_option("high")
    await editor.get_by_label("System prompt").fill("You research things.")
    await editor.get_by_label("Tool names (comma-separated)").or_(editor.get_by_label("Other tool names (comma-separated)")).fill("get_current_time, read_file")
    await editor.get_by_role("button", name="Create agent").click()

    card = page.locator("article.agent-card")
    await expect(card.locator(".agent-name")).to_have_text("Researcher <img src=x onerror=alert(1)>")
    assert await page.locator("article.agent-card img").count() == 0
    agents = (await server.client.get("/api/v1/agents", token="admin")).data
    assert len(agents) == 1
    agent = agents[0]
    assert (agent["icon"], agent["agentType"], agent["modelName"], agent["defaultThinkingLevel"]) == ("🔬", "plan_execute", "llama-lan", "high")
    assert agent["systemPrompt"] == "You research things."
    tools = (await server.client.get(f"/api/v1/agents/{agent['id']}/tools", token="admin")).data
    assert [t["toolName"] for t in tools] == ["get_current_time", "read_file"]

    await card.get_by_role("button", name="Edit").click()
    await expect(editor.get_by_label("Model", exact=True)).to_have_value('["lan","llama-lan"]')
    await editor.get_by_label("Name", exact=True).fill("Researcher")
    await editor.get_by_label("Model", exact=True).select_option("")
    await editor.get_by_role("button", name="Save").click()
    await expect(card.locator(".agent-name")).to_have_text("Researcher")
    agent = (await server.client.get(f"/api/v1/agents/{agent['id']}", token="admin")).data
    assert agent["name"] == "Researcher" and agent["modelName"] == ""

    await card.get_by_role("button", name="Delete Researcher").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(page.get_by_text("No agents yet")).to_be_visible()
    assert (await server.client.get("/api/v1/agents", token="admin")).data == []


async def test_a_personal_access_token_is_shown_once_and_works(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    await open_console(page, server, admin, "#/account")
    await page.get_by_role("button", name="+ New token").click()
    await page.get_by_role("dialog").get_by_label("Name", exact=True).fill("ci script")
    await page.get_by_role("dialog").get_by_role("button", name="Create").click()
    field = page.get_by_label("New token")
    await expect(field).to_have_value(__import__("re").compile(r"^mc_"))
    token = await field.input_value()
    await page.get_by_role("button", name="Done").click()
    await expect(page.get_by_role("cell", name="ci script", exact=True)).to_be_visible()
    assert token not in await page.content()
    assert (await server.client.get("/api/v1/auth/tokens", token=token)).status == 200


async def test_an_admin_changes_a_members_role(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    r = await server.client.post("/api/v1/auth/users", {"username": "bob", "password": "password-123"}, token="admin")
    bob = r.data["id"]
    await open_console(page, server, admin, "#/people")
    await page.get_by_label("Workspace role of bob").select_option("viewer")
    await expect(page.get_by_text("bob is now viewer")).to_be_visible()
    members = (await server.client.get("/api/v1/workspaces/1/members", token="admin")).data
    assert next(m for m in members if m["userId"] == bob)["role"] == "viewer"


async def test_an_agent_is_created_from_a_template(page: Any, server: RunningServer, admin: dict[str, Any]) -> None:
    templates = (await server.client.get("/api/v1/templates", token="admin")).data
    assert templates, "the install seeds agent templates"
    first = templates[0]
    await open_console(page, server, admin, "#/agents")
    await page.get_by_role("button", name=f"Use template {first['name']}").click()
    await expect(page.locator("article.agent-card .agent-name")).to_have_text(first["name"])
    agents = (await server.client.get("/api/v1/agents", token="admin")).data
    assert [a["name"] for a in agents] == [first["name"]]
