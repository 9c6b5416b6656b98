"""The chat view's microphone button with Chromium's fake audio device: a spoken question gets an answer."""
from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import numpy as np
import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from platform_server.integrations.local_speech import LocalSpeech, read_wav, resample, to_wav  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, open_console  # noqa: E402
from tests.helpers.chat import make_agent  # noqa: E402
from tests.helpers.fake_openai import Script, ScriptedOpenAI  # noqa: E402
from tests.helpers.models import use_fake_openai  # noqa: E402
from tests.helpers.server import RunningServer  # noqa: E402


async def question_wav(path: Path) -> Path:
    """"What time is it?" in the local voice, 16 kHz mono, with silence around it (Chromium loops the file)."""
    spoken = read_wav(await LocalSpeech().synthesize_wav("What time is it?"))
    speech = resample(spoken.samples, spoken.rate)
    quiet = np.zeros(16000 // 4, dtype=np.int16)
    path.write_bytes(to_wav(np.concatenate([quiet, speech, quiet, quiet, quiet, quiet]).tobytes(), 16000))
    return path


@pytest.fixture
async def talk_page(tmp_path: Path) -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    wav = await question_wav(tmp_path / "question.wav")
    args = CHROMIUM_ARGS + ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                            f"--use-file-for-fake-audio-capture={wav}", "--autoplay-policy=no-user-gesture-required"]
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(20_000)
        page = await context.new_page()
        page.logs = []  # type: ignore[attr-defined]
        page.on("console", lambda msg: page.logs.append(f"{msg.type}: {msg.text}"))
        page.on("pageerror", lambda exc: page.logs.append(f"pageerror: {exc}"))
        try:
            yield page
        finally:
            await context.close()
            await browser.close()


@pytest.mark.parametrize("gesture", ["click to start and to send", "hold to talk"])
async def test_the_microphone_button_talks_to_the_agent_and_shows_the_exchange(
    talk_page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI, gesture: str
) -> None:
    page = talk_page
    await use_fake_openai(server.client, llm.url, token="admin")
    await make_agent(server.client, token="admin", name="Helper")
    r = await server.client.put("/api/v1/feature-flags/talk_mode", {"enabled": True}, token="admin")
    assert r.status == 200, r.body
    llm.enqueue(Script(text="It is ten o'clock. Time for tea."))
    await open_console(page, server, admin)
    mic = page.get_by_role("button", name="Talk", exact=True)
    if gesture == "hold to talk":
        await mic.hover()
        await page.mouse.down()
    else:
        await mic.click()
    await expect(page.locator(".talk-status")).to_contain_text("Listening…", timeout=20_000)
    await expect(mic).to_have_attribute("aria-pressed", "true")
    # The fake device plays the question in real time; the live (partial) transcript shows it.
    await expect(page.locator(".talk-status")).to_contain_text("time", timeout=30_000)
    if gesture == "hold to talk":
        await page.mouse.up()
    else:
        await mic.click()
    await expect(mic).to_have_attribute("aria-pressed", "false")
    await expect(page.locator(".msg.user .msg-text")).to_contain_text("time", timeout=30_000)
    answer = page.locator(".msg.assistant").last
    await expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)
    await expect(answer).to_contain_text("It is ten o'clock. Time for tea.")
    convs = (await server.client.get("/api/v1/conversations", token="admin")).data
    messages = (await server.client.get(f"/api/v1/conversations/{convs[0]['conversationId']}/messages",
                                        token="admin")).data
    assert [m["role"] for m in messages] == ["user", "assistant"] and "time" in messages[0]["content"]
    stop = page.get_by_role("button", name="Stop talking")
    if await stop.is_visible():  # the answer may still be playing
        await stop.click()
    await expect(stop).to_be_hidden()
    assert not [line for line in page.logs if "Content Security Policy" in line or "pageerror" in line], page.logs


async def test_the_microphone_shows_only_while_talk_mode_is_on_and_a_refusal_is_said_and_cleared(
    talk_page: Any, server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    page = talk_page
    await use_fake_openai(server.client, llm.url, token="admin")
    await make_agent(server.client, token="admin", name="Helper")
    await open_console(page, server, admin)
    await expect(page.locator(".composer")).to_be_visible()
    mic = page.get_by_role("button", name="Talk", exact=True)
    await expect(mic).to_be_hidden()  # talk_mode is off by default: nothing offered that the server refuses

    assert (await server.client.put("/api/v1/feature-flags/talk_mode", {"enabled": True}, token="admin")).status == 200
    await page.reload()
    await expect(mic).to_be_visible()
    # Turned off while the page is open: the server refuses the socket; the page says so and stops listening.
    assert (await server.client.put("/api/v1/feature-flags/talk_mode", {"enabled": False}, token="admin")).status == 200
    await mic.click()
    status = page.locator(".talk-status")
    await expect(status).to_have_text("Talk mode is off (feature flag talk_mode)")
    await expect(status).to_have_attribute("role", "alert")
    await expect(page.get_by_role("button", name="Stop talking")).to_be_hidden()
    await expect(mic).to_be_hidden()
    await page.wait_for_timeout(1500)  # nothing comes back to "Listening…" afterwards
    await expect(status).to_have_text("Talk mode is off (feature flag talk_mode)")
