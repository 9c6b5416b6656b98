"""The settings page: validated fields with errors beside them, language, sidecar, flags that hide features, paths."""
from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect

from tests.browser.conftest import failed_requests, open_console
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer

W = "/api/v1/workflows"
APPROVAL_GRAPH = {
    "nodes": [{"id": "start", "type": "start", "config": {}},
              {"id": "review", "type": "approval", "config": {"message": "Ship {{input.what}}?"}},
              {"id": "shipped", "type": "end", "config": {"output": "shipped {{input.what}}"}},
              {"id": "dropped", "type": "end", "config": {"output": "dropped"}}],
    "edges": [{"from": "start", "to": "review"}, {"from": "review", "to": "shipped", "condition": "approved"},
              {"from": "review", "to": "dropped", "condition": "rejected"}],
}


pytestmark = pytest.mark.llm_models("scripted", "vision-7b")


async def paused_run(server: RunningServer, what: str) -> dict[str, Any]:
    client = server.client
    wid = (await client.post(W, {"name": f"Ship {what}"}, token="admin")).data["id"]
    assert (await client.put(f"{W}/{wid}/draft", {"graph": APPROVAL_GRAPH}, token="admin")).status == 200
    assert (await client.post(f"{W}/{wid}/publish", token="admin")).status == 200
    run_id = (await client.post(f"{W}/{wid}/runs", {"input": {"what": what}}, token="admin")).data["id"]
    for _ in range(300):
        run = (await client.get(f"{W}/runs/{run_id}", token="admin")).data
        if run["status"] == "paused":
            return run
        await asyncio.sleep(0.02)
    raise AssertionError("the run never paused")


async def test_settings_fields_show_the_apis_errors_beside_them_and_save(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(server.client, llm.url, token="admin", provider_id="lan")
    failures = failed_requests(page)
    await open_console(page, server, admin, "#/settings")
    general = page.get_by_role("region", name="General")
    await general.get_by_label("Time zone").fill("Mars/Olympus_Mons")
    await general.get_by_label("Language").select_option("zh-CN")
    await general.get_by_role("button", name="Save settings").click()
    await expect(general.get_by_label("Time zone")).to_have_attribute("aria-invalid", "true")
    await expect(general.locator(".field-error")).to_have_text("unknown IANA time zone")
    await general.get_by_label("Time zone").fill("Europe/Berlin")
    await general.get_by_role("button", name="Save settings").click()
    await expect(page.get_by_text("Settings saved")).to_be_visible()
    settings = (await server.client.get("/api/v1/settings", token="admin")).data
    assert settings["timezone"] == "Europe/Berlin" and settings["language"] == "zh-CN"

    sidecar = page.get_by_role("region", name="Multimodal sidecar")
    await sidecar.get_by_label("Use a sidecar for images").check()
    await sidecar.get_by_role("button", name="Save sidecar").click()
    await expect(sidecar.get_by_label("Sidecar provider")).to_have_attribute("aria-invalid", "true")
    await expect(sidecar.locator(".field-error")).to_contain_text("required with modelName")
    await sidecar.get_by_label("Sidecar provider").select_option("lan")
    await sidecar.get_by_label("Sidecar model").select_option("scripted")
    await sidecar.get_by_role("button", name="Save sidecar").click()
    await expect(page.get_by_text("Sidecar saved")).to_be_visible()
    saved = (await server.client.get("/api/v1/settings", token="admin")).data["sidecar"]
    assert saved == {"enabled": True, "provider": "lan", "modelName": "scripted"}

    paths = page.get_by_role("region", name="Data directory")
    import os

    await expect(paths).to_contain_text(os.path.realpath(server.platform.config.data_dir))
    await expect(page.get_by_role("region", name="Embedded model")).to_contain_text("Runtime (llama-cpp) installed")
    failures[:] = [f for f in failures if "/api/v1/settings" not in f]  # the two 400s above were the point
    assert failures == []


async def test_a_workflow_step_is_approved_from_the_inbox_and_the_workflows_flag_hides_it(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    first = await paused_run(server, "v1")
    failures = failed_requests(page)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    await open_console(page, server, admin, "#/approvals")
    runs = page.get_by_role("region", name="Workflow runs")
    await expect(runs).to_contain_text("Ship v1?")
    await runs.get_by_role("button", name="Approve").click()
    await expect(page.get_by_text(f"Workflow run {first['id']} approved")).to_be_visible()
    for _ in range(300):
        run = (await server.client.get(f"{W}/runs/{first['id']}", token="admin")).data
        if run["status"] == "succeeded":
            break
        await asyncio.sleep(0.02)
    assert run["output"] == "shipped v1"

    await paused_run(server, "v2")
    await expect(runs).to_contain_text("Ship v2?")
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings", exact=True).click()
    await page.get_by_label("Feature workflows").uncheck()
    await expect(page.get_by_text(re.compile(r"^Workflow editor.* off$"))).to_be_visible()
    flags = {f["key"]: f["enabled"] for f in (await server.client.get("/api/v1/feature-flags", token="admin")).data}
    assert flags["workflows"] is False
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Approvals").click()
    await expect(page.get_by_text("Nothing is waiting for you.")).to_be_visible()
    await expect(page.get_by_role("region", name="Workflow runs")).to_have_count(0)
    before = len([u for u in requests if "/workflows/runs/paused" in u])
    await page.reload()
    await expect(page.get_by_text("Nothing is waiting for you.")).to_be_visible()
    assert len([u for u in requests if "/workflows/runs/paused" in u]) == before  # not even asked
    assert failures == []
