"""Provider extras: vendor_b device-code sign-in (code shown, polled), provider order by dragging, embedding default."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect

from tests.browser.conftest import failed_requests, open_console
from tests.helpers.chat import make_agent
from tests.helpers.fake_oauth import FakeOAuthServer
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer, free_port, start_server

CLIENT = "console-client"


@pytest.fixture
async def idp() -> AsyncIterator[FakeOAuthServer]:
    srv = FakeOAuthServer(client_id=CLIENT)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
async def server(idp: FakeOAuthServer, tmp_path: Any) -> AsyncIterator[RunningServer]:
    running = await start_server(
        str(tmp_path / "data"),
        oauth_vendor_b_authorize_url=idp.url + "/authorize", oauth_vendor_b_token_url=idp.url + "/token",
        oauth_vendor_b_device_code_url=idp.url + "/device/code", oauth_vendor_b_client_id=CLIENT,
        oauth_vendor_b_callback_port=free_port(), oauth_vendor_a_credentials_path=str(tmp_path / "none.json"),
    )
    try:
        yield running
    finally:
        await running.stop()


pytestmark = pytest.mark.llm_models("scripted", "embed-small")


async def test_vendor_b_connects_with_a_device_code_that_the_page_shows_and_polls(
    page: Any, server: RunningServer, admin: dict[str, Any], idp: FakeOAuthServer
) -> None:
    failures = failed_requests(page)
    await open_console(page, server, admin, "#/providers")
    vendor = page.get_by_role("region", name="Sign in to OpenAI account")  # the provider's name, not the stand-in id
    await expect(vendor.get_by_text("not connected")).to_be_visible()
    await vendor.get_by_role("button", name="Connect with a device code").click()
    code = page.get_by_label("User code")
    await expect(code).not_to_be_empty()
    user_code = await code.inner_text()
    assert user_code in {d.user_code for d in idp.devices.values()}
    await expect(vendor.get_by_role("link", name=idp.url, exact=False)).to_be_visible()
    idp.approve(user_code)
    await expect(vendor.get_by_text("Connected.")).to_be_visible(timeout=15_000)
    await vendor.get_by_role("button", name="Done").click()
    await expect(vendor.get_by_text("connected", exact=True)).to_be_visible()
    catalog = (await server.client.get("/api/v1/models/catalog", token="admin")).data
    assert next(p for p in catalog if p["id"] == "vendor_b")["apiKey"] in idp.access_tokens
    await expect(page.get_by_role("region", name="Anthropic account: credentials on this machine")).to_contain_text("not connected")
    assert [t for t in await page.locator("main h2, main h3").all_inner_texts() if "vendor" in t.lower()] == []
    assert failures == []


async def test_models_page_puts_the_users_own_server_first_and_folds_the_presets(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(server.client, llm.url, token="admin", provider_id="zz-home-box")
    await open_console(page, server, admin, "#/models")
    await expect(page.locator(".provider-list > section.provider[data-provider='zz-home-box']")).to_be_visible()
    top = await page.locator(".provider-list > section.provider").evaluate_all("(els) => els.map((e) => e.dataset.provider)")
    assert "zz-home-box" in top and not {"deepseek", "openrouter", "vllm", "vendor_a"} & set(top)  # not below ten disabled presets
    presets = page.locator(".provider-list details.presets")
    await expect(presets.locator("summary")).to_contain_text("More providers you can enable")
    await expect(presets.locator("section.provider[data-provider='ollama']")).to_be_hidden()
    await presets.locator("summary").click()
    await presets.locator("section.provider[data-provider='ollama']").get_by_role("button", name="Enable Ollama", exact=True).click()
    await expect(page.locator(".provider-list > section.provider[data-provider='ollama']")).to_be_visible()
    await expect(page.get_by_text("Vendor A")).to_have_count(0)


async def test_provider_order_is_dragged_and_saved_and_the_embedding_default_chosen(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(server.client, llm.url, token="admin", provider_id="alpha")
    await use_fake_openai(server.client, llm.url, token="admin", provider_id="beta")
    agent = await make_agent(server.client, token="admin", name="Router")
    r = await server.client.put(f"/api/v1/agents/{agent}/provider-preferences", {"providerIds": ["alpha", "beta"]}, token="admin")
    assert r.status == 200
    failures = failed_requests(page)
    await open_console(page, server, admin, "#/providers")
    order = page.get_by_role("list", name="Provider order")
    await expect(order.locator("li").nth(0)).to_contain_text("alpha")
    await order.locator("li[data-provider='beta']").drag_to(order.locator("li[data-provider='alpha']"))
    await expect(order.locator("li").nth(0)).to_contain_text("beta")
    await page.get_by_role("button", name="Save order").click()
    await expect(page.get_by_text("Provider order saved")).to_be_visible()
    saved = [r["providerId"] for r in (await server.client.get(f"/api/v1/agents/{agent}/provider-preferences", token="admin")).data]
    assert saved[:2] == ["beta", "alpha"]
    await expect(page.get_by_role("button", name="Save order")).to_be_disabled()
    await order.get_by_role("button", name="Move alpha up").click()
    await page.get_by_role("button", name="Save order").click()
    await expect(page.get_by_role("button", name="Save order")).to_be_disabled()
    saved = [r["providerId"] for r in (await server.client.get(f"/api/v1/agents/{agent}/provider-preferences", token="admin")).data]
    assert saved[:2] == ["alpha", "beta"]

    assert failures == []


async def test_the_default_embedding_model_is_chosen_and_tested(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(server.client, llm.url, token="admin", provider_id="alpha")
    r = await server.client.post("/api/v1/models/alpha/models", {"modelName": "embed-small", "modelType": "embedding"}, token="admin")
    assert r.status == 200, r.body
    target = r.data["id"]
    failures = failed_requests(page)
    await open_console(page, server, admin, "#/providers")
    embedding = page.get_by_role("region", name="Embedding model")
    await embedding.get_by_label("Default embedding model").select_option(label="embed-small · alpha")
    await expect(page.get_by_text("Default embedding model saved")).to_be_visible()
    assert (await server.client.get("/api/v1/models/embedding/default", token="admin")).data == str(target)
    await embedding.get_by_role("button", name="Test").click()
    await expect(embedding.get_by_role("status")).to_contain_text("OK")
    assert any(req.path.endswith("/embeddings") for req in llm.request_log)
    assert failures == []
