"""A walk over every build page and tab (skills, tools, memory, goals, automation, channels, data, agent detail)
with seeded data: no API answer is 4xx/5xx, nothing is logged as a console error, nothing scrolls sideways at 390 px.

With CONSOLE_SCREENSHOTS=<folder> it also saves each page at 1280 px and 390 px (the docs' screenshots)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env
from tests.browser.conftest import failed_requests, open_console
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.memory import dream_answer, fact, summarize
from tests.helpers.server import RunningServer
from tests.test_datasources import make_db
from tests.test_mcp import SERVER_SCRIPT
from tests.test_skill_install import GOOD_ZIP

SHOTS = os.environ.get("CONSOLE_SCREENSHOTS")
DOC_PAGES = {"skill-detail", "skills-curator", "tools-mcp", "tools-plugins", "memory-facts", "memory-dreams", "goals",
             "automation-cron", "automation-triggers", "automation-workflows", "automation-teams", "channels-webchat",
             "channels-im", "data-datasources", "data-workspace", "agent-skills"}


async def seed(server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI) -> dict[str, str]:
    """One of everything the build pages show."""
    api = server.client
    env = await admin_env(server, admin, llm, name="Concierge")
    ids = {"agent": env.agent_id}

    async def ok(method: str, path: str, body: Any = None, **kw: Any) -> Any:
        r = await api.request(method, path, body, token="admin", **kw)
        assert r.status == 200, (path, r.body)
        return r.data

    form = aiohttp.FormData()
    form.add_field("file", GOOD_ZIP, filename="csv-tools.zip", content_type="application/zip")
    ids["skill"] = (await ok("POST", "/api/v1/skills/install/upload", data=form))["id"]
    await ok("POST", "/api/v1/skills/curator/dry-run")
    await ok("POST", "/api/v1/skills/curator/snapshots", {"reason": "before the walk"})
    ids["mcp"] = (await ok("POST", "/api/v1/mcp/servers", {"name": "local", "transport": "stdio", "command": sys.executable,
                                                            "args": [SERVER_SCRIPT, "stdio"]}))["id"]
    await summarize(env, [fact("city", "Lives in Lyon"), fact("drink", "Likes tea")], conversation_id="trip", token="admin")
    await summarize(env, [fact("drink", "Likes coffee")], conversation_id="trip-2", token="admin")
    llm.enqueue(dream_answer("Settled on coffee.", {"key": "drink", "action": "keep", "after": "Likes coffee"}))
    await ok("POST", f"/api/v1/memory/{env.agent_id}/dreaming/focused", {"topic": "drink"})
    ids["goal"] = (await ok("POST", "/api/v1/goals", {"conversationId": "trip", "agentId": env.agent_id,
                                                        "title": "Plan the Lyon trip", "criteria": ["Hotel booked"]}))["id"]
    ids["cron"] = (await ok("POST", "/api/v1/cron-jobs", {"name": "Morning digest", "agentId": env.agent_id,
                                                          "cronExpression": "30 7 * * 1-5", "timezone": "Europe/Paris",
                                                          "message": "Write the digest"}))["id"]
    await ok("POST", f"/api/v1/cron-jobs/{ids['cron']}/run")
    await ok("POST", "/api/v1/triggers", {"name": "Gold orders", "agentId": env.agent_id, "type": "event",
                                          "eventType": "order.created", "filter": {"customer.tier": "gold"},
                                          "message": "Thank {{event.customer.name}}"})
    wf = await ok("POST", "/api/v1/workflows", {"name": "Release review", "description": "Approve before shipping"})
    ids["workflow"] = wf["id"]
    graph = {"nodes": [{"id": "start", "type": "start", "config": {}},
                       {"id": "review", "type": "approval", "config": {"message": "Ship {{input.what}}?"}},
                       {"id": "shipped", "type": "end", "config": {"output": "shipped"}},
                       {"id": "dropped", "type": "end", "config": {"output": "dropped"}}],
             "edges": [{"from": "start", "to": "review"}, {"from": "review", "to": "shipped", "condition": "approved"},
                       {"from": "review", "to": "dropped", "condition": "rejected"}]}
    await ok("PUT", f"/api/v1/workflows/{wf['id']}/draft", {"graph": graph})
    await ok("POST", f"/api/v1/workflows/{wf['id']}/publish")
    await ok("POST", f"/api/v1/workflows/{wf['id']}/runs", {"input": {"what": "v2"}})
    writer = (await ok("POST", "/api/v1/agents", {"name": "Writer", "systemPrompt": "You write."}))["id"]
    ids["team"] = (await ok("POST", "/api/v1/teams", {"name": "Docs team", "leadAgentId": env.agent_id,
                                                      "memberAgentIds": [writer]}))["id"]
    llm.enqueue(Script(text=json.dumps({"tasks": [{"agent": "Writer", "task": "draft the intro"}]})),
                Script(text="Intro drafted."), Script(text="Intro ready."))
    await ok("POST", f"/api/v1/teams/{ids['team']}/runs", {"goal": "write the docs"})
    ids["webchat"] = (await ok("POST", "/api/v1/channels", {"name": "Site chat", "channelType": "webchat", "agentId": env.agent_id,
                                                            "settings": {"title": "Ask us", "welcomeMessage": "Hello!"}}))["id"]
    ids["im"] = (await ok("POST", "/api/v1/channels", {"name": "Team chat", "channelType": "im_a", "agentId": env.agent_id,
                                                       "settings": {"appKey": "dingteamchat"}}))["id"]
    make_db(server)
    await ok("POST", "/api/v1/datasources", {"name": "shop", "type": "sqlite", "config": {"path": "shop.db"}})
    await ok("PUT", f"/api/v1/agents/{env.agent_id}/workspace/files/notes/todo.md", {"content": "- book the hotel\n"})
    return ids


def pages(ids: dict[str, str]) -> list[tuple[str, str]]:
    a = ids["agent"]
    return [
        ("skills", "#/skills/installed"), ("skill-detail", f"#/skills/installed/{ids['skill']}"), ("skills-install", "#/skills/install"),
        ("skills-curator", "#/skills/curator"), ("skills-routines", "#/skills/routines"),
        ("tools", "#/tools/builtin"), ("tools-mcp", f"#/tools/mcp/{ids['mcp']}"), ("tools-acp", "#/tools/acp"), ("tools-plugins", "#/tools/plugins"),
        ("memory-facts", f"#/memory/{a}/facts"), ("memory-files", f"#/memory/{a}/files"), ("memory-dreams", f"#/memory/{a}/dreams"),
        ("goals", f"#/goals/{ids['goal']}"),
        ("automation-cron", f"#/automation/cron/{ids['cron']}"), ("automation-triggers", "#/automation/triggers"),
        ("automation-workflows", f"#/automation/workflows/{ids['workflow']}"), ("automation-teams", f"#/automation/teams/{ids['team']}"),
        ("channels-webchat", f"#/channels/{ids['webchat']}"), ("channels-im", f"#/channels/{ids['im']}"),
        ("data-datasources", "#/data/datasources"), ("data-files", "#/data/files/trip"), ("data-workspace", f"#/data/workspace/{a}"),
        ("data-templates", "#/data/templates"),
        *[(f"agent-{t}", f"#/agents/{a}/{t}") for t in ("skills", "tools", "knowledge", "memory", "files", "channels", "cron")],
    ]


async def test_every_build_page_loads_without_a_failed_request_or_a_console_error(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    ids = await seed(server, admin, llm)
    failures = failed_requests(page)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.text} {m.location.get('url', '')}")
            if m.type == "error" and "favicon.ico" not in m.location.get("url", "") else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    await open_console(page, server, admin, "#/skills")
    await expect(page.get_by_role("heading", name="Skills", exact=True)).to_be_visible()
    for name, hash_ in pages(ids):
        await page.evaluate("h => { location.hash = h; }", hash_)
        await expect(page.locator("main h1:visible").first).to_be_visible()
        await expect(page.get_by_text("Loading…")).to_have_count(0)
        await page.wait_for_timeout(300)
        if SHOTS and name in DOC_PAGES:
            folder = Path(SHOTS)
            folder.mkdir(parents=True, exist_ok=True)
            await page.set_viewport_size({"width": 1280, "height": 1300})
            await page.wait_for_timeout(200)
            await page.screenshot(path=str(folder / f"{name}-1280.png"), full_page=True)
            await page.set_viewport_size({"width": 390, "height": 1400})
            await page.wait_for_timeout(200)
            await page.screenshot(path=str(folder / f"{name}-390.png"), full_page=True)
            await page.set_viewport_size({"width": 1280, "height": 800})
        await page.set_viewport_size({"width": 390, "height": 844})
        await page.wait_for_timeout(100)
        wide = await page.evaluate("Math.max(document.documentElement.scrollWidth, document.querySelector('main')?.scrollWidth || 0)")
        await page.set_viewport_size({"width": 1280, "height": 800})
        assert wide <= 390, f"{hash_} is {wide}px wide at 390px"
        assert not failures, (hash_, failures)
        assert not errors, (hash_, errors)
