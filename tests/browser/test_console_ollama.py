"""The console adds an Ollama server by its own protocol and sets its keep-alive and context length."""
from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import open_console
from tests.helpers.fake_ollama import OllamaModel, ScriptedOllama
from tests.helpers.server import RunningServer


@pytest.fixture
async def ollama() -> AsyncIterator[ScriptedOllama]:
    srv = ScriptedOllama([OllamaModel("llama3.2:latest", "llama", 131072), OllamaModel("nomic-embed-text:latest", "nomic-bert", 2048, ("embedding",))])
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


async def test_an_ollama_server_is_added_discovered_and_given_keep_alive_and_num_ctx(
    page: Any, server: RunningServer, admin: dict[str, Any], ollama: ScriptedOllama
) -> None:
    await open_console(page, server, admin, "#/models")
    form = page.locator("form.add-provider")
    await form.get_by_label("Name").fill("GPU box")
    await form.get_by_label("Protocol").select_option("ollama")
    await form.get_by_label("Base URL").fill(ollama.url)
    await form.get_by_role("button", name="Add and discover models").click()

    dialog = page.get_by_role("dialog", name="Add discovered models")
    await expect(dialog.get_by_text("llama3.2:latest")).to_be_visible()
    await dialog.get_by_role("button", name="Add selected").click()
    card = page.locator("section.provider[data-provider='gpu-box']")
    await expect(card.locator("tr[data-model='llama3.2:latest']")).to_be_visible()

    await card.get_by_role("button", name="Configure").click()
    settings = page.get_by_role("dialog", name="Configure GPU box")
    await settings.get_by_label("Keep loaded (5m, 1h, -1 = always; empty: Ollama's default)").fill("30m")
    await settings.get_by_label("Context length (num_ctx; empty: the server default)").fill("4096")
    await settings.get_by_role("button", name="Save").click()
    await expect(page.get_by_text("Saved")).to_be_visible()

    catalog = (await server.client.get("/api/v1/models/catalog", token="admin")).data
    provider = next(p for p in catalog if p["id"] == "gpu-box")
    assert provider["protocol"] == "ollama" and provider["keepAlive"] == "30m" and provider["numCtx"] == 4096
    models = {m["modelName"]: m for m in provider["models"]}
    assert models["llama3.2:latest"]["maxInputTokens"] == 131072  # from /api/show
