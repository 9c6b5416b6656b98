"""The Automation page in headless Chromium: cron preview and run now, triggers with a test event, workflows."""
from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.build_helpers import admin_env, toast
from tests.browser.conftest import open_console
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.server import RunningServer


async def test_a_cron_job_previews_its_next_five_runs_in_the_zone_and_run_now_produces_a_conversation(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    env = await admin_env(server, admin, llm, name="Reporter")
    await open_console(page, server, admin, "#/automation/cron")
    form = page.get_by_role("form", name="New cron job")
    await form.get_by_label("Name").fill("Morning report")
    await form.get_by_label("Schedule").fill("30 7 * * 1-5")
    await form.get_by_label("Time zone").fill("Asia/Tokyo")
    preview = form.locator(".schedule-preview")
    await expect(preview).to_contain_text("At 07:30 on Monday through Friday")
    await expect(preview).to_contain_text("Asia/Tokyo")
    await expect(preview.locator("li")).to_have_count(5)
    await expect(preview.locator("li").first).to_contain_text(re.compile(r"07:30|7:30"))
    await form.get_by_label("Schedule").fill("30 7 * *")
    await expect(preview).to_contain_text("must have 5 fields")
    await form.get_by_label("Schedule").fill("30 7 * * 1-5")
    await form.get_by_label("Message to the agent").fill("Write the morning report")
    await form.get_by_role("button", name="Create").click()

    detail = page.locator(".cron-detail")
    await expect(detail.get_by_role("heading", name="Morning report")).to_be_visible()
    job = (await server.client.get("/api/v1/cron-jobs", token="admin")).data[0]
    assert job["timezone"] == "Asia/Tokyo" and job["cronExpression"] == "30 7 * * 1-5" and job["agentId"] == env.agent_id
    # One time format across the tab: the list's next run, the detail's and the preview's first run are the same
    # text, in the job's zone with its abbreviation (the list showed the viewer's time in another format).
    next_in_detail = await detail.locator("dt:text('Next run') + dd").inner_text()
    assert re.search(r"07:30|7:30", next_in_detail) and "GMT+9" in next_in_detail, next_in_detail
    await expect(page.locator("li", has_text="Morning report").locator("small")).to_contain_text(f"next {next_in_detail}")
    await expect(detail.locator(".schedule-preview li").first).to_have_text(next_in_detail)
    await detail.get_by_role("button", name="Run now").click()
    runs = detail.locator(".run-list li")
    await expect(runs.first).to_have_attribute("data-status", "succeeded", timeout=15_000)
    link = runs.first.get_by_role("link", name="Open conversation")
    href = await link.get_attribute("href")
    conversation_id = href.split("/")[-1]
    messages = (await server.client.get(f"/api/v1/conversations/{conversation_id}/messages", token="admin")).data
    assert [m["role"] for m in messages] == ["user", "assistant"] and messages[0]["content"] == "Write the morning report"
    await link.click()
    await expect(page.locator(".msg.user").first).to_contain_text("Write the morning report")


async def test_an_event_trigger_is_created_and_a_test_event_fires_it_only_when_the_filter_matches(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await admin_env(server, admin, llm)
    await open_console(page, server, admin, "#/automation/triggers")
    form = page.get_by_role("form", name="New trigger")
    await form.get_by_label("Name").fill("Gold orders")
    await form.get_by_label("Event type").fill("order.created")
    await form.get_by_label("Filters").fill("customer.tier=gold")
    await form.get_by_label("Message template").fill("Thank {{event.customer.name}}")
    await form.get_by_role("button", name="Create trigger").click()
    item = page.locator("li[data-trigger='Gold orders']")
    await expect(item).to_contain_text("customer.tier=gold")
    await item.get_by_label("Test payload for Gold orders").fill('{"customer": {"tier": "silver"}}')
    await item.get_by_role("button", name="Test").click()
    await expect(item.locator(".test-result")).to_contain_text("Not fired")
    await item.get_by_label("Test payload for Gold orders").fill('{"customer": {"tier": "gold", "name": "Ann"}}')
    await item.get_by_role("button", name="Test").click()
    await expect(item.locator(".test-result")).to_contain_text("Fired: run")


CYCLE = """{
  "nodes": [
    {"id": "start", "type": "start", "config": {}},
    {"id": "a", "type": "llm", "config": {"prompt": "x"}},
    {"id": "b", "type": "llm", "config": {"prompt": "y"}},
    {"id": "end", "type": "end", "config": {}}
  ],
  "edges": [{"from": "start", "to": "a"}, {"from": "a", "to": "b"}, {"from": "b", "to": "a"}, {"from": "b", "to": "end"}]
}"""

APPROVAL = """{
  "nodes": [
    {"id": "start", "type": "start", "config": {}},
    {"id": "review", "type": "approval", "config": {"message": "Ship {{input.what}}?"}},
    {"id": "shipped", "type": "end", "config": {"output": "shipped {{input.what}}"}},
    {"id": "dropped", "type": "end", "config": {"output": "dropped"}}
  ],
  "edges": [{"from": "start", "to": "review"}, {"from": "review", "to": "shipped", "condition": "approved"},
            {"from": "review", "to": "dropped", "condition": "rejected"}]
}"""


async def test_a_workflow_with_a_cycle_shows_the_compilers_error_inline_and_a_fixed_one_runs_and_resumes(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    await open_console(page, server, admin, "#/automation/workflows")
    form = page.get_by_role("form", name="New workflow")
    await form.get_by_label("Name").fill("Release")
    await form.get_by_role("button", name="Create").click()
    detail = page.locator(".workflow-detail")
    editor = detail.get_by_label("Definition")
    await editor.fill(CYCLE)
    cycle = detail.locator(".diag li[data-code='CYCLE']")
    await expect(cycle).to_contain_text("The graph has a cycle through")
    await expect(detail.get_by_role("button", name="Publish")).to_be_disabled()
    await expect(detail.locator("g.node[data-node='start']")).to_be_visible()
    await expect(detail.locator("g.node.bad")).not_to_have_count(0)
    await expect(detail.locator("path.edge.back")).to_have_count(1)

    await editor.fill("{ not json")
    await expect(detail.locator(".diag li[data-code='JSON']")).to_be_visible()
    await editor.fill(APPROVAL)
    await expect(detail.locator(".diag li.ok")).to_contain_text("Compiles without problems.")
    await detail.get_by_role("button", name="Publish").click()
    await toast(page, "Published")
    await detail.get_by_label("Run input (JSON)").fill('{"what": "v2"}')
    await detail.get_by_role("button", name="Start run").click()
    run = detail.locator(".wf-run")
    await expect(run).to_contain_text("Waiting at review: Ship v2?")
    await run.get_by_role("button", name="Approve").click()
    await expect(run.locator(".badge").first).to_have_text("succeeded")
    await expect(run).to_contain_text("shipped v2")
    await expect(run.locator(".wf-steps li")).to_have_count(3)


async def test_a_team_is_created_and_its_run_shows_the_tasks_moving_to_completed(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    import json

    from tests.helpers.chat import make_agent
    from tests.helpers.fake_openai import Script

    await admin_env(server, admin, llm, name="Lead")
    for name in ("Writer", "Checker"):
        await make_agent(server.client, token="admin", name=name)
    llm.enqueue(Script(text=json.dumps({"tasks": [{"agent": "Writer", "task": "draft the intro"},
                                                  {"agent": "Checker", "task": "check the intro"}]})),
                Script(text="Intro drafted.", delay_s=0.3), Script(text="Looks right."), Script(text="Final: intro ready."))
    await open_console(page, server, admin, "#/automation/teams")
    form = page.get_by_role("form", name="New team")
    await form.get_by_label("Name").fill("Docs")
    await form.get_by_label("Lead agent").select_option(label="Lead")
    await form.get_by_label("Members").select_option(label=["Writer", "Checker"])
    await form.get_by_role("button", name="Create team").click()
    detail = page.locator(".team-detail")
    await expect(detail.get_by_role("heading", name="Docs")).to_be_visible()
    await detail.get_by_label("Goal for the team").fill("write the docs")
    await detail.get_by_role("button", name="Start run").click()
    tasks = detail.locator(".team-tasks li")
    await expect(tasks).to_have_count(2)
    await expect(tasks.nth(0)).to_contain_text("draft the intro")
    await expect(tasks.nth(0)).to_have_attribute("data-status", "completed")
    await expect(tasks.nth(1)).to_have_attribute("data-status", "completed")
    await expect(detail.locator(".team-run")).to_contain_text("Final: intro ready.")
