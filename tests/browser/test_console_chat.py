"""The chat view in headless Chromium against the real runtime and the scripted OpenAI-compatible model."""
from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import open_console
from tests.helpers.chat import make_agent
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer

# A 1x1 PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


pytestmark = pytest.mark.llm_models("scripted", "other")


@pytest.fixture
async def agent(server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI) -> str:
    await use_fake_openai(server.client, llm.url, token="admin", vision=True)
    return await make_agent(server.client, token="admin", name="Helper", icon="🦉")


async def send(page: Any, text: str) -> None:
    box = page.get_by_label("Message", exact=True)
    await box.fill(text)
    await box.press("Enter")


def needs_approvals(server: RunningServer) -> None:
    route = "/api/v1/chat/{conversationId}/pending-approvals"
    if not any(r.template == route for r in server.platform.routes):
        pytest.skip(f"needs {route} and the tool guard (approvals)")


# The chat stream's body as the page reads it, failing on demand the way a fetch fails while its page unloads
# (Chromium rejects the body read with a TypeError "network error"); the server side stays real.
FAILING_STREAMS = """
(() => {
  const failers = [];
  window.__failStreams = () => failers.forEach((fail) => fail());
  const realFetch = window.fetch;
  window.fetch = async (...args) => {
    const response = await realFetch(...args);
    if (!String(args[0]).endsWith("/api/v1/chat/stream") || !response.body) return response;
    const reader = response.body.getReader();
    let failed = null;
    const body = new ReadableStream({
      start(controller) { failers.push(() => { failed = true; reader.cancel(); controller.error(new TypeError("network error")); }); },
      async pull(controller) {
        const { done, value } = await reader.read();
        if (failed) return;
        if (done) controller.close(); else controller.enqueue(value);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
})();
"""


def last_turn(page: Any) -> Any:
    return page.locator(".msg.assistant").last


async def test_a_streamed_answer_renders_markdown_and_thinking_without_running_injected_html(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(
        reasoning="Let me think about <b>this</b>.",
        text=["Hello **world**", "! <img src=x onerror=\"window.pwned=1\">", "<script>window.pwned=2</script>",
              "\n\n```py\nprint(1)\n```\n"],
        delay_s=0.05,
    ))
    await open_console(page, server, admin)
    await send(page, "Say hi <b>now</b>")

    turn = last_turn(page)
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".md strong")).to_have_text("world")
    await expect(turn.locator(".md pre code")).to_have_text("print(1)\n")
    assert await turn.locator("script, [onerror]").count() == 0
    assert await turn.locator("img[src]").count() == 0  # no remote images either
    assert await page.evaluate("window.pwned") is None
    thinking = turn.locator("details.thinking")
    assert await thinking.get_attribute("open") is None
    await thinking.locator("summary").click()
    await expect(thinking.locator(".thinking-body")).to_have_text("Let me think about <b>this</b>.")
    await expect(page.locator(".msg.user .msg-text")).to_have_text("Say hi <b>now</b>")

    await expect(page.locator(".conv-item .conv-title")).to_have_text("Say hi <b>now</b>")
    conv_id = (await server.client.get("/api/v1/conversations", token="admin")).data[0]["conversationId"]
    assert page.url.endswith("#/chat/" + conv_id)
    await page.reload()  # the stored history renders the same way
    await expect(last_turn(page).locator(".md strong")).to_have_text("world")
    await expect(page.locator(".md")).to_have_count(1)
    assert await page.evaluate("window.pwned") is None


async def test_the_turn_says_what_it_does_before_the_first_token_and_the_answer_shows_its_speed(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text=["Slow ", "local ", "model."], completion_tokens=12, delay_s=1.5))  # 1.5 s to the first token
    await open_console(page, server, admin)
    await send(page, "Take your time")
    turn = last_turn(page)
    await expect(turn.locator(".turn-status")).to_have_text("Thinking…", timeout=1400)  # no token yet, the status is live
    assert await turn.locator(".md").count() == 0
    await expect(turn.locator(".turn-status")).to_have_text("Writing…")
    await expect(turn).to_have_attribute("data-status", "completed", timeout=15_000)  # 1.5 s before each chunk
    status = turn.locator(".turn-status")
    await expect(status).to_contain_text("s to first token")
    await expect(status).to_contain_text("tokens/s")
    shown = await status.inner_text()
    assert float(shown.split(" s to first token")[0].split("· ")[-1]) >= 1.4, shown
    await page.reload()  # stored with the message: the history shows it too
    await expect(last_turn(page).locator(".turn-status")).to_have_text(shown)


async def test_stopping_an_answer_keeps_the_partial_text(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text=[f"part{i} " for i in range(40)], delay_s=0.15))
    await open_console(page, server, admin)
    await send(page, "Tell me a long story")
    turn = last_turn(page)
    await expect(turn.locator(".md")).to_contain_text("part2")
    await page.get_by_role("button", name="Stop").click()
    await expect(turn).to_have_attribute("data-status", "stopped")
    await expect(turn.locator(".turn-status")).to_have_text("Stopped")
    await expect(page.get_by_role("button", name="Send")).to_be_visible()
    shown = await turn.locator(".md").inner_text()
    assert "part39" not in shown
    conv_id = (await server.client.get("/api/v1/conversations", token="admin")).data[0]["conversationId"]
    msgs = (await server.client.get(f"/api/v1/conversations/{conv_id}/messages", token="admin")).data
    assert msgs[-1]["status"] == "stopped" and msgs[-1]["content"].startswith("part0 part1 part2")


async def test_refreshing_mid_answer_reattaches_and_shows_the_answer_once(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    words = [f"w{i:02d} " for i in range(24)]
    llm.enqueue(Script(text=words, delay_s=0.12))
    bodies: list[dict[str, Any]] = []
    page.on("request", lambda r: bodies.append(json.loads(r.post_data)) if r.url.endswith("/api/v1/chat/stream") else None)
    await open_console(page, server, admin)
    await send(page, "Count slowly")
    await expect(last_turn(page).locator(".md")).to_contain_text("w05")
    await page.reload()

    turn = last_turn(page)
    await expect(turn).to_have_attribute("data-status", "completed", timeout=15_000)
    # the old page's fetch failed as it unloaded: that is no error of the re-attached, finishing answer
    await expect(turn.locator(".turn-status")).not_to_have_class("turn-status error")
    await expect(turn.locator(".turn-status")).not_to_contain_text("Connection lost")
    full = "".join(words).strip()
    await expect(turn.locator(".md")).to_have_text(full)
    text = await page.locator(".messages").inner_text()
    assert text.count("w00") == 1 and text.count("w23") == 1
    assert await page.locator(".msg.user").count() == 1
    reconnect = [b for b in bodies if b.get("reconnect")]
    assert len(reconnect) == 1 and int(reconnect[0]["lastEventId"]) > 0
    assert len(llm.requests) == 1  # re-attached to the running turn, no second model call


async def test_a_stream_that_fails_as_the_page_unloads_leaves_no_connection_lost_under_the_reattached_answer(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    words = [f"w{i:02d} " for i in range(20)]
    llm.enqueue(Script(text=words, delay_s=0.15))
    await page.add_init_script(FAILING_STREAMS)
    await open_console(page, server, admin)
    await send(page, "Count slowly")
    await expect(last_turn(page).locator(".md")).to_contain_text("w03")
    # what an unloading page goes through: `pagehide` (the progress is saved), then its fetch's body read fails
    await page.evaluate("window.dispatchEvent(new PageTransitionEvent('pagehide', {persisted: false}))")
    await page.evaluate("window.__failStreams()")
    await page.wait_for_timeout(300)  # the failed read settles (before the fix, the error went into the saved turn)
    saved = await page.evaluate("Object.keys(sessionStorage).filter(k => k.startsWith('ap.chat.')).map(k => sessionStorage.getItem(k)).join()")
    assert "Connection lost" not in saved  # the unloading page's own failure is not kept for the next one
    await page.reload()
    turn = last_turn(page)
    await expect(turn).to_have_attribute("data-status", "completed", timeout=15_000)
    await expect(turn.locator(".md")).to_have_text("".join(words).strip())
    await expect(turn.locator(".turn-status")).not_to_contain_text("Connection lost")
    await expect(turn.locator(".turn-status")).not_to_have_class("turn-status error")


async def test_conversations_can_be_searched_pinned_renamed_and_deleted(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    for conv_id, text in (("c-apples", "About apples"), ("c-pears", "About pears")):
        await server.client.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": conv_id, "message": text}, token="admin")
    await open_console(page, server, admin)
    items = page.locator(".conv-item")
    await expect(items).to_have_count(2)

    await page.get_by_label("Search conversations").fill("pears")
    await expect(items).to_have_count(1)
    await expect(items.first.locator(".conv-title")).to_have_text("About pears")
    await page.get_by_label("Search conversations").fill("")
    await expect(items).to_have_count(2)

    await page.get_by_role("button", name="Pin About apples").click()
    await expect(items.first).to_have_class("conv-item pinned")
    await expect(items.first.locator(".conv-title")).to_have_text("About apples")

    await page.get_by_role("button", name="Rename About pears").click()
    await page.get_by_role("dialog").get_by_label("Title").fill("Pear notes")
    await page.get_by_role("dialog").get_by_role("button", name="Rename").click()
    await expect(page.locator(".conv-title", has_text="Pear notes")).to_be_visible()

    await page.locator(".conv-link", has_text="Pear notes").click()
    await expect(page.locator(".chat-title")).to_have_text("Pear notes")
    await expect(page.locator(".msg.user .msg-text")).to_have_text("About pears")
    await expect(last_turn(page).locator(".md")).to_have_text("Echo: About pears")

    await page.get_by_role("button", name="Delete Pear notes").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(items).to_have_count(1)
    await expect(page.locator(".chat-title")).to_have_text("New chat")
    convs = (await server.client.get("/api/v1/conversations", token="admin")).data
    assert [c["conversationId"] for c in convs] == ["c-apples"] and convs[0]["pinned"] == 1


async def test_an_image_attachment_is_uploaded_and_sent_as_content_parts(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    await open_console(page, server, admin)
    await page.locator("input.file-input").set_input_files(files=[{"name": "dot <x>.png", "mimeType": "image/png", "buffer": PNG}])
    await expect(page.locator(".chip-name")).to_have_text("dot <x>.png")
    await send(page, "What is in the picture?")
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    img = page.locator(".msg.user img.attachment-img")
    await expect(img).to_have_count(1)
    await page.wait_for_function("() => document.querySelector('.msg.user img').naturalWidth === 1")
    user_msg = llm.requests[-1]["messages"][-1]
    kinds = [part["type"] for part in user_msg["content"]]
    assert kinds == ["text", "image_url"]


async def test_the_model_picker_sets_the_conversations_model(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    r = await server.client.post("/api/v1/models/fake/models", {"modelName": "other", "modelType": "chat"}, token="admin")
    assert r.status == 200, r.body
    await open_console(page, server, admin)
    await send(page, "first")
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    assert llm.requests[-1]["model"] == "scripted"
    await page.get_by_label("Model", exact=True).select_option(label="other · fake")
    await expect(page.get_by_text("Model: other")).to_be_visible()
    await send(page, "second")
    await expect(page.locator(".msg.assistant[data-status=completed]")).to_have_count(2)
    assert llm.requests[-1]["model"] == "other"
    conv = (await server.client.get("/api/v1/conversations", token="admin")).data[0]
    assert (conv["modelProvider"], conv["modelName"]) == ("fake", "other")


async def test_approving_a_tool_call_runs_it_and_finishes_the_answer(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    r = await server.client.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["write_file", "read_file"]}, token="admin")
    assert r.status == 200, r.body
    llm.enqueue(
        Script(text="I will save it.", tool_calls=[ScriptedToolCall("write_file", {"path": "notes.txt", "content": "hello <b>"})]),
        Script(text="Saved **notes.txt**."),
    )
    await open_console(page, server, admin)
    await send(page, "Save a note")
    card = page.get_by_role("group", name="Tool approval")
    await expect(card).to_contain_text("write_file")
    await expect(card.locator(".tool-args")).to_contain_text('"path": "notes.txt"')
    await expect(last_turn(page)).to_have_attribute("data-status", "awaiting_approval")
    files = await server.client.get(f"/api/v1/agents/{agent}/workspace/files/notes.txt", token="admin")
    assert files.status == 404  # nothing runs before the approval

    await card.get_by_role("button", name="Approve").click()
    await expect(card.locator(".approval-decision")).to_have_text("Approved")
    turn = last_turn(page)
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".md strong")).to_have_text("notes.txt")
    tool = turn.locator(".tool-card[data-tool=write_file]")
    await expect(tool.locator(".tool-state")).to_have_text("done")
    await tool.locator("summary").click()
    await expect(tool.locator(".tool-args")).to_contain_text('"content": "hello <b>"')
    # resolved in place: the card's turn goes on, no "/approve" bubble, no stale "Waiting for approval"
    await expect(page.locator(".msg.user")).to_have_count(1)
    await expect(page.locator(".msg.assistant")).to_have_count(1)
    await expect(turn.get_by_role("group", name="Tool approval")).to_have_count(1)
    await expect(page.get_by_text("Waiting for approval")).to_have_count(0)
    files = await server.client.get(f"/api/v1/agents/{agent}/workspace/files/notes.txt", token="admin")
    assert files.raw == b"hello <b>"
    await page.reload()  # the stored history shows the call once, with its result, and the card resolved
    await expect(last_turn(page).locator(".md strong")).to_have_text("notes.txt")
    await expect(page.locator(".tool-card[data-tool=write_file]")).to_have_count(1)
    await expect(page.locator(".tool-card[data-tool=write_file] .tool-state")).to_have_text("done")
    card = page.get_by_role("group", name="Tool approval")
    await expect(card).to_have_count(1)
    await expect(card.locator(".approval-decision")).to_have_text("Approved")
    await expect(page.locator(".msg.user")).to_have_count(1)
    await expect(page.locator(".msg.assistant")).to_have_count(1)


async def test_a_pending_approval_survives_a_refresh(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    needs_approvals(server)
    await server.client.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["write_file"]}, token="admin")
    llm.enqueue(
        Script(tool_calls=[ScriptedToolCall("write_file", {"path": "later.txt", "content": "ok"})]),
        Script(text="Done."),
    )
    await open_console(page, server, admin)
    await send(page, "Save later")
    await expect(last_turn(page)).to_have_attribute("data-status", "awaiting_approval")
    await page.reload()
    card = page.get_by_role("group", name="Tool approval")
    await expect(card).to_contain_text("write_file")
    await expect(card).to_have_count(1)  # from the stored call, not twice with the pending list's
    await expect(last_turn(page).locator(".turn-status")).to_have_text("Waiting for approval")
    await card.get_by_role("button", name="Approve").click()
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    await expect(page.get_by_text("Waiting for approval")).to_have_count(0)
    await expect(card.locator(".approval-decision")).to_have_text("Approved")
    files = await server.client.get(f"/api/v1/agents/{agent}/workspace/files/later.txt", token="admin")
    assert files.raw == b"ok"


async def test_denying_a_tool_call_does_not_run_it(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    await server.client.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["write_file"]}, token="admin")
    llm.enqueue(
        Script(tool_calls=[ScriptedToolCall("write_file", {"path": "x.txt", "content": "no"})]),
        Script(text="Understood, I did not save it."),
    )
    await open_console(page, server, admin)
    await send(page, "Save x")
    await page.get_by_role("group", name="Tool approval").get_by_role("button", name="Deny").click()
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    await expect(last_turn(page).locator(".md")).to_contain_text("did not save")
    files = await server.client.get(f"/api/v1/agents/{agent}/workspace/files/x.txt", token="admin")
    assert files.status == 404


async def test_an_approval_a_newer_message_superseded_shows_as_no_longer_waiting_after_a_reload(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    needs_approvals(server)
    await server.client.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["write_file"]}, token="admin")
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("write_file", {"path": "y.txt", "content": "no"})]), Script(text="Fine, something else."))
    await open_console(page, server, admin)
    await send(page, "Save y")
    await expect(last_turn(page)).to_have_attribute("data-status", "awaiting_approval")
    await send(page, "Never mind, tell me a joke")  # the new message denies what was waiting
    await expect(last_turn(page).locator(".md")).to_contain_text("something else")
    await expect(page.get_by_role("group", name="Tool approval").locator(".approval-decision")).to_contain_text("No longer waiting")
    await expect(page.get_by_text("Waiting for approval")).to_have_count(0)
    await page.reload()
    card = page.get_by_role("group", name="Tool approval")
    await expect(card).to_have_count(1)
    await expect(card.locator(".approval-decision")).to_contain_text("No longer waiting")
    await expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    await expect(page.get_by_text("Waiting for approval")).to_have_count(0)


async def test_the_workspace_switcher_scopes_every_call(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    lab = (await server.client.post("/api/v1/workspaces", {"name": "Lab"}, token="admin")).data["id"]
    r = await server.client.post("/api/v1/agents", {"name": "LabBot", "icon": "🧪"}, token="admin", workspace=lab)
    assert r.status == 200, r.body
    headers: list[str | None] = []
    page.on("request", lambda req: headers.append(req.headers.get("x-workspace-id")) if "/api/v1/agents" in req.url else None)
    await open_console(page, server, admin, "#/agents")
    await expect(page.locator(".agent-name")).to_have_text(["Helper"])
    await page.get_by_label("Workspace").select_option(label="Lab")
    await expect(page.locator(".agent-name")).to_have_text(["LabBot"])
    assert headers[0] == "1" and headers[-1] == lab
    await page.reload()  # the choice is remembered
    await expect(page.locator(".agent-name")).to_have_text(["LabBot"])
    await expect(page.get_by_label("Workspace")).to_have_value(lab)


async def test_at_phone_width_the_conversation_list_is_a_drawer_and_the_theme_toggles(
    browser_context: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    await server.client.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "c-phone", "message": "Hello phone"}, token="admin")
    page = await browser_context.new_page()
    await page.set_viewport_size({"width": 390, "height": 780})
    await open_console(page, server, admin)
    link = page.locator(".conv-link", has_text="Hello phone")
    await expect(link).not_to_be_in_viewport()
    await page.get_by_role("button", name="Conversations").click()
    await expect(link).to_be_in_viewport()
    await link.click()
    await expect(page.locator(".chat-title")).to_have_text("Hello phone")
    await expect(link).not_to_be_in_viewport()
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing overflows sideways

    before = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    await page.get_by_role("button", name="Dark theme").click()
    await expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert await page.evaluate("getComputedStyle(document.body).backgroundColor") != before
    await page.reload()
    await expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    await expect(page.get_by_role("button", name="Light theme")).to_be_visible()


async def test_an_answer_whose_request_was_fitted_to_the_model_window_says_so_under_it(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    model_id = (await server.client.get("/api/v1/models/default", token="admin")).data["id"]
    r = await server.client.put("/api/v1/models/fake/models/context-window", {"modelId": model_id, "maxInputTokens": 600}, token="admin")
    assert r.status == 200, r.body
    llm.enqueue(Script(text="Fitted."))
    await open_console(page, server, admin)
    await send(page, "Read this: " + "lorem ipsum dolor sit amet " * 400)
    turn = last_turn(page)
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".turn-status")).to_contain_text("to fit the model's context: 1 long message shortened, 2 tools not offered")


async def test_a_message_typed_before_any_agent_exists_is_kept_and_sent_once_there_is_one(
    page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(server.client, llm.url, token="admin")
    await open_console(page, server, admin)  # the admin fixture removed setup's agent: none exists
    await expect(page.get_by_text("No agents yet")).to_be_visible()
    await send(page, "Plan my week please")
    box = page.get_by_label("Message", exact=True)
    await expect(box).to_have_value("Plan my week please")  # not thrown away
    await make_agent(server.client, token="admin", name="Planner")
    await page.reload()  # e.g. back from the Agents page: the draft is still there
    await expect(box).to_have_value("Plan my week please")
    await expect(page.get_by_label("Agent")).to_contain_text("Planner")
    llm.enqueue(Script(text="Monday: rest."))
    await box.press("Enter")
    await expect(last_turn(page)).to_contain_text("Monday: rest.")
    await expect(box).to_have_value("")
    await page.reload()
    await expect(page.get_by_label("Message", exact=True)).to_have_value("")  # a sent message is no draft


async def test_a_message_sent_while_the_agents_are_still_loading_waits_for_them_and_goes_out(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text="Hello there."))
    arrived = asyncio.Event()

    async def slow_agents(route: Any) -> None:
        await arrived.wait()  # the agent list answers only once the message was sent
        await route.continue_()

    await page.route("**/api/v1/agents?*", slow_agents)
    await open_console(page, server, admin)
    await send(page, "Quick question")
    await page.wait_for_timeout(300)
    arrived.set()
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    await expect(last_turn(page).locator(".md")).to_have_text("Hello there.")
    await expect(page.locator(".msg.user")).to_have_count(1)


async def test_the_conversation_drawer_opened_while_the_page_still_loads_stays_open(
    browser_context: Any, server: RunningServer, admin: dict[str, Any], agent: str
) -> None:
    page = await browser_context.new_page()
    await page.set_viewport_size({"width": 390, "height": 780})
    arrived = asyncio.Event()

    async def slow_agents(route: Any) -> None:
        await arrived.wait()  # the agent list answers only once the drawer was opened
        await route.continue_()

    await page.route("**/api/v1/agents?*", slow_agents)
    await open_console(page, server, admin)
    await page.get_by_role("button", name="Conversations").click()
    arrived.set()
    await expect(page.locator(".chat-layout .agent-picker option").first).not_to_have_text("No agents")
    await page.wait_for_timeout(300)
    await expect(page.locator("#conv-sidebar")).to_be_in_viewport()


async def test_new_chat_after_a_new_chats_first_answer_starts_a_fresh_conversation(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text=["First answer."]))
    await open_console(page, server, admin)
    await send(page, "first question")
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    first = (await server.client.get("/api/v1/conversations", token="admin")).data[0]["conversationId"]

    await page.locator("a.new-chat").click()
    await expect(page.locator(".chat-title")).to_have_text("New chat")
    await expect(page.locator(".msg")).to_have_count(0)

    llm.enqueue(Script(text=["Second answer."]))
    await send(page, "second question")
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    convs = (await server.client.get("/api/v1/conversations", token="admin")).data
    assert len(convs) == 2
    old = await server.client.get(f"/api/v1/conversations/{first}/messages", token="admin")
    texts = [m.get("content") for m in (old.data if isinstance(old.data, list) else old.data["messages"])]
    assert "second question" not in texts


async def test_every_message_can_be_copied_as_text_or_markdown_and_an_answer_rated_up_or_down(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    llm.enqueue(Script(text=["Use **bold** and ", "`code`."]))
    await open_console(page, server, admin)
    await send(page, "How do I format?")
    turn = last_turn(page)
    await expect(turn).to_have_attribute("data-status", "completed")
    actions = turn.get_by_role("toolbar", name="Message actions")
    copy, copy_md = actions.locator("button").nth(0), actions.locator("button").nth(1)
    await expect(copy_md).to_have_text("Copy Markdown")
    await copy_md.click()
    await expect(copy_md).to_have_text("Copied")  # written
    assert await page.evaluate("navigator.clipboard.readText()") == "Use **bold** and `code`."
    await expect(copy).to_have_text("Copy")
    await copy.click()
    await expect(copy).to_have_text("Copied")
    assert await page.evaluate("navigator.clipboard.readText()") == "Use bold and code."
    mine = page.locator(".msg.user").get_by_role("toolbar", name="Message actions").locator("button").first
    await mine.click()
    await expect(mine).to_have_text("Copied")
    assert await page.evaluate("navigator.clipboard.readText()") == "How do I format?"

    await actions.get_by_role("button", name="Good answer").click()
    await expect(actions.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "true")
    conv_id = (await server.client.get("/api/v1/conversations", token="admin")).data[0]["conversationId"]
    msgs = (await server.client.get(f"/api/v1/conversations/{conv_id}/messages", token="admin")).data
    assert msgs[-1]["metadata"]["rating"] == "up"
    await actions.get_by_role("button", name="Bad answer").click()
    await expect(actions.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "true")
    await page.reload()  # stored with the message
    actions = last_turn(page).get_by_role("toolbar", name="Message actions")
    await expect(actions.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "true")
    await expect(actions.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "false")
    await actions.get_by_role("button", name="Bad answer").click()  # pressed again: no rating
    await expect(actions.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "false")
    msgs = (await server.client.get(f"/api/v1/conversations/{conv_id}/messages", token="admin")).data
    assert "rating" not in msgs[-1]["metadata"]


async def test_keyboard_shortcuts_start_a_new_chat_stop_an_answer_and_focus_the_message_box(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text=[f"part{i} " for i in range(40)], delay_s=0.15))
    await open_console(page, server, admin)
    await send(page, "Tell me a long story")
    turn = last_turn(page)
    await expect(turn.locator(".md")).to_contain_text("part2")
    await page.locator(".chat-title").click()  # focus away from the message box
    await page.keyboard.press("Escape")
    await expect(turn).to_have_attribute("data-status", "stopped")
    await page.keyboard.press("Shift+Escape")
    await expect(page.get_by_label("Message", exact=True)).to_be_focused()
    await page.locator(".chat-title").click()
    await page.keyboard.press("Control+Shift+O")
    await expect(page.locator(".msg")).to_have_count(0)
    assert page.url.endswith("#/chat")
    await expect(page.locator(".chat-title")).to_have_text("New chat")


async def test_regenerate_and_edit_keep_earlier_versions_the_user_can_page_through(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text="First answer."), Script(text="Second answer."), Script(text="Answer to the edit."))
    await open_console(page, server, admin)
    await send(page, "My question")
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    await last_turn(page).get_by_role("button", name="Regenerate").click()
    pager = page.get_by_role("group", name="Answer versions")
    await expect(pager).to_contain_text("2 / 2")
    await expect(page.locator(".msg.assistant:visible .md")).to_have_text("Second answer.")
    await pager.get_by_role("button", name="Previous version").click()
    await expect(pager).to_contain_text("1 / 2")
    await expect(page.locator(".msg.assistant:visible .md")).to_have_text("First answer.")
    await pager.get_by_role("button", name="Next version").click()

    await page.locator(".msg.user:visible").get_by_role("button", name="Edit").click()
    await page.get_by_label("Edit message").fill("My question, sharper")
    await page.get_by_role("button", name="Send", exact=True).first.click()
    await expect(pager).to_contain_text("3 / 3")
    await expect(page.locator(".msg.user:visible .msg-text")).to_have_text("My question, sharper")
    await expect(page.locator(".msg.assistant:visible .md")).to_have_text("Answer to the edit.")
    assert [m["content"] for m in llm.requests[-1]["messages"] if m["role"] != "system"] == ["My question, sharper"]
    await page.reload()  # the versions are stored
    await expect(pager).to_contain_text("3 / 3")
    await pager.get_by_role("button", name="Previous version").click()
    await pager.get_by_role("button", name="Previous version").click()
    await expect(page.locator(".msg.user:visible .msg-text")).to_have_text("My question")
    await expect(page.locator(".msg.assistant:visible .md")).to_have_text("First answer.")


async def test_a_stopped_answer_continues_in_place_where_it_stopped(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text=[f"part{i} " for i in range(40)], delay_s=0.15), Script(text=["and ", "the ", "end."]))
    await open_console(page, server, admin)
    await send(page, "Tell me a long story")
    turn = last_turn(page)
    await expect(turn.locator(".md")).to_contain_text("part2")
    await page.get_by_role("button", name="Stop").click()
    await expect(turn).to_have_attribute("data-status", "stopped")
    await turn.get_by_role("button", name="Continue").click()
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".md")).to_contain_text("and the end.")
    await expect(page.locator(".msg.user")).to_have_count(1)  # no bubble for the continuation prompt
    assert "Continue your last answer" in llm.requests[-1]["messages"][-1]["content"]
    await page.reload()
    await expect(page.locator(".msg.user")).to_have_count(1)
    await expect(page.locator(".msg.assistant")).to_have_count(1)
    await expect(last_turn(page).locator(".md")).to_contain_text("part0")
    await expect(last_turn(page).locator(".md")).to_contain_text("and the end.")


async def test_an_earlier_answer_is_regenerated_and_an_earlier_question_edited_with_later_messages_in_the_old_version(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text="Answer one."), Script(text="Answer two."), Script(text="Answer one, again."),
                Script(text="Answer to the edit."))
    await open_console(page, server, admin)
    await send(page, "Question one")
    await expect(last_turn(page)).to_have_attribute("data-status", "completed")
    await send(page, "Question two")
    await expect(last_turn(page).locator(".md")).to_have_text("Answer two.")
    await page.locator(".msg.assistant").first.get_by_role("button", name="Regenerate").click()
    pager = page.get_by_role("group", name="Answer versions")
    await expect(pager).to_contain_text("2 / 2")
    # the new version holds the regenerated answer only: the later exchange belongs to the old version
    await expect(page.locator(".msg.user:visible .msg-text")).to_have_text(["Question one"])
    await expect(page.locator(".msg.assistant:visible .md")).to_have_text(["Answer one, again."])
    assert [m["content"] for m in llm.requests[-1]["messages"] if m["role"] != "system"] == ["Question one"]
    await pager.get_by_role("button", name="Previous version").click()
    await expect(page.locator(".msg.user:visible .msg-text")).to_have_text(["Question one", "Question two"])
    await expect(page.locator(".msg.assistant:visible .md")).to_have_text(["Answer one.", "Answer two."])
    await expect(page.locator(".msg.user:visible").get_by_role("button", name="Edit")).to_have_count(0)  # an old version
    await pager.get_by_role("button", name="Next version").click()

    await send(page, "Question two, asked anew")  # a third exchange, after the regenerated one
    await expect(page.locator(".msg.assistant:visible").last).to_have_attribute("data-status", "completed")
    await page.locator(".msg.user:visible", has_text="Question one").get_by_role("button", name="Edit").click()
    await page.get_by_label("Edit message").fill("Question one, sharper")
    await page.get_by_role("button", name="Send", exact=True).first.click()
    await expect(pager).to_contain_text("3 / 3")
    await expect(page.locator(".msg.user:visible .msg-text")).to_have_text(["Question one, sharper"])
    assert [m["content"] for m in llm.requests[-1]["messages"] if m["role"] != "system"] == ["Question one, sharper"]
    await page.reload()  # stored: the versions and what each holds
    await expect(pager).to_contain_text("3 / 3")
    await pager.get_by_role("button", name="Previous version").click()
    await expect(page.locator(".msg.user:visible .msg-text")).to_have_text(["Question one", "Question two, asked anew"])


async def test_an_answer_cut_at_the_length_limit_offers_continue(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    llm.enqueue(Script(text="The first half", finish_reason="length"), Script(text=" and the rest."))
    await open_console(page, server, admin)
    await send(page, "Tell me everything")
    turn = last_turn(page)
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".turn-status")).to_contain_text("length limit")
    await turn.get_by_role("button", name="Continue").click()
    await expect(turn.locator(".md")).to_contain_text("The first half and the rest.")
    await expect(turn.get_by_role("button", name="Continue")).to_have_count(0)
    await page.reload()
    await expect(last_turn(page).locator(".md")).to_contain_text("The first half and the rest.")
    await expect(page.locator(".msg.user")).to_have_count(1)


async def test_load_earlier_messages_puts_the_older_page_before_the_others(
    page: Any, server: RunningServer, admin: dict[str, Any], agent: str, llm: ScriptedOpenAI
) -> None:
    for i in range(51):  # 102 messages: one page of 100 and two more
        llm.enqueue(Script(text=f"Answer {i}."))
        body = {"agentId": agent, "conversationId": "c-long", "message": f"Question {i}"}
        events = await server.client.sse("POST", "/api/v1/chat/stream", body, token="admin")
        assert events[-1].event == "done", events[-1]
    await open_console(page, server, admin, "#/chat/c-long")
    await expect(page.locator(".msg.user").last.locator(".msg-text")).to_have_text("Question 50")
    await expect(page.locator(".msg.user")).to_have_count(50)
    await page.get_by_role("button", name="Load earlier messages").click()
    await expect(page.locator(".msg.user")).to_have_count(51)
    await expect(page.locator(".msg.user").first.locator(".msg-text")).to_have_text("Question 0")
    await expect(page.locator(".msg.assistant").first.locator(".md")).to_have_text("Answer 0.")
    await expect(page.get_by_role("button", name="Load earlier messages")).to_have_count(0)
