"""A failing provider from the user's side: it is used again soon after it recovers, a hung one costs seconds, not a
minute, and no error a user reads names the provider's URL or quotes its answer."""
from __future__ import annotations

import asyncio
import json
import logging
import re
import time

import pytest

from tests.helpers.chat import ChatEnv, text_of
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script
from tests.helpers.models import use_fake_openai
from tests.helpers.server import free_port
from tests.test_resilience_providers import Pair, pair  # noqa: F401 - the fixture: two providers, backup preferred

PROBE_S = 0.5


async def probing(two: Pair) -> None:
    """The primary's rest (one probe interval) is over: its next request is a trial."""
    async def due() -> bool:
        return (await two.state("primary"))["state"] == "probing"

    await eventually(due, what="the probe interval over")


SECRET = "upstream said: see http://llm-internal.corp.example:8443/v1/keys?token=sk-live-123 for details"


@pytest.mark.config(llm_provider_probe_interval_s=PROBE_S)
async def test_a_provider_that_recovers_is_used_again_within_one_probe_interval(pair: Pair) -> None:
    for i in range(3):  # three failures open the provider's circuit
        pair.primary.enqueue(Script(error_status=500, error_message="primary down"))
        pair.backup.enqueue(Script(text=f"backup {i}"))
        events = await pair.stream(f"try {i}", f"c{i}")
        assert events[-1].data["runtimeProvider"] == "backup"
    assert (await pair.state("primary"))["state"] == "cooldown"
    asked = len(pair.primary.requests)
    pair.backup.enqueue(Script(text="no detour"))
    events = await pair.stream("skipped", "c3")
    assert text_of(events) == "no detour" and len(pair.primary.requests) == asked  # skipped while it rests

    await probing(pair)  # the provider works again (nothing scripted: it echoes)
    events = await pair.stream("are you back", "c4")
    assert events[-1].data["status"] == "completed" and events[-1].data["runtimeProvider"] == "primary"
    assert text_of(events) == "Echo: are you back"
    state = await pair.state("primary")
    assert state["state"] == "healthy" and state["consecutiveFailures"] == 0
    events = await pair.stream("and again", "c5")
    assert events[-1].data["runtimeProvider"] == "primary"


@pytest.mark.config(llm_provider_probe_interval_s=PROBE_S)
async def test_a_failed_trial_rests_the_provider_for_another_interval(pair: Pair) -> None:
    for i in range(3):
        pair.primary.enqueue(Script(error_status=503))
        events = await pair.stream(f"try {i}", f"c{i}")
    await probing(pair)
    pair.primary.enqueue(Script(error_status=503))  # the trial fails
    pair.backup.enqueue(Script(text="backup again"))
    asked = len(pair.primary.requests)
    events = await pair.stream("trial", "c3")
    assert text_of(events) == "backup again" and len(pair.primary.requests) == asked + 1
    assert (await pair.state("primary"))["state"] == "cooldown"
    events = await pair.stream("skipped", "c4")
    assert events[-1].data["runtimeProvider"] == "backup" and len(pair.primary.requests) == asked + 1


async def test_a_hung_provider_ends_the_turn_with_an_error_within_the_default_first_byte_timeout(env: ChatEnv) -> None:
    env.llm.enqueue(Script(hang=True))  # accepts the request, never answers
    started = time.monotonic()
    events = await env.api.sse("POST", "/api/v1/chat/stream", {"agentId": env.agent_id, "conversationId": "h1", "message": "hi"},
                               token="alice", timeout=40)
    took = time.monotonic() - started
    assert [e.event for e in events if e.event == "error"] == ["error"], events
    assert events[-1].event == "done" and events[-1].data["status"] == "failed"
    assert took < 20, f"the hung provider held the user for {took:.1f} s"  # it was 60 s
    error = next(e.data for e in events if e.event == "error")
    assert error["message"].startswith("The model did not answer in time.") and error["errorId"] in error["message"]


def _leaks(text: str, url: str) -> list[str]:
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    # (":8443", not "8443": a message id, a snowflake, may hold those four digits)
    return [s for s in (url, host_port, "llm-internal", ":8443", "sk-live-123", "upstream said") if s in text]


@pytest.mark.config(llm_first_byte_timeout_s=0.5, llm_provider_probe_interval_s=0)  # every call reaches the provider
async def test_no_error_a_chat_user_reads_names_the_provider_or_quotes_its_answer(
    env: ChatEnv, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    url = env.llm.url
    channel = await env.api.post("/api/v1/channels", {"name": "web", "channelType": "webchat", "agentId": env.agent_id}, token="alice")
    webchat = channel.data["publicToken"]
    seen: list[str] = []
    faults = {"answers 500 with a body": Script(error_status=500, error_message=SECRET), "hangs": Script(hang=True)}
    for n, (fault, script) in enumerate(faults.items()):
        env.llm.enqueue(script)
        events = await env.stream("hi", conversation_id=f"e{n}")
        errors = [e.data for e in events if e.event == "error"]
        assert len(errors) == 1, (fault, events)
        text = json.dumps(errors[0])
        assert not _leaks(text, url), (fault, text)
        assert re.fullmatch(r"[0-9a-f]{12}", errors[0]["errorId"]), errors[0]
        assert errors[0]["errorId"] in errors[0]["message"]
        seen.append(errors[0]["errorId"])

        env.llm.enqueue(script)  # the webchat's visitors see the same frame
        events = await env.api.sse("POST", "/api/v1/channels/webchat/stream", {"token": webchat, "sessionId": f"s{n}", "message": "hi"})
        frames = json.dumps([e.data for e in events if e.event == "error"])
        assert "errorId" in frames and not _leaks(frames, url), (fault, frames)

        env.llm.enqueue(script)  # and so does the synchronous chat route
        r = await env.api.post("/api/v1/chat", {"agentId": env.agent_id, "conversationId": f"y{n}", "message": "hi"}, token="alice")
        assert r.status >= 400 and not _leaks(json.dumps(r.body), url), (fault, r.body)

        messages = await env.messages(f"e{n}")  # the stored turn shows nothing of it either
        assert not _leaks(json.dumps(messages), url)

    # The details are in the log, under the id the user was given.
    logged = {m.group(1): r.getMessage() for r in caplog.records if (m := re.search(r"\[error ([0-9a-f]{12})\]", r.getMessage()))}
    assert "llm-internal.corp.example:8443" in logged[seen[0]] and url in logged[seen[0]]
    assert "timed out" in logged[seen[1]]

    port = free_port()  # a provider nobody listens on: "cannot connect to http://127.0.0.1:port/..."
    await use_fake_openai(env.api, f"http://127.0.0.1:{port}/v1", provider_id="down", model="d-model")  # now the default
    events = await env.stream("hi", conversation_id="down")
    frames = json.dumps([e.data for e in events if e.event == "error"])
    assert frames != "[]" and f"127.0.0.1:{port}" not in frames and str(port) not in frames, frames


@pytest.mark.config(llm_provider_probe_interval_s=PROBE_S, llm_first_byte_timeout_s=1.0)
async def test_while_a_trial_request_is_in_flight_other_requests_keep_skipping_the_provider(pair: Pair) -> None:
    for i in range(3):
        pair.primary.enqueue(Script(error_status=500))
        await pair.stream(f"try {i}", f"c{i}")
    await probing(pair)
    asked = len(pair.primary.requests)
    pair.primary.enqueue(Script(hang=True))  # the trial hangs until the first-byte limit; the backup echoes
    trial = asyncio.create_task(pair.stream("trial", "t1"))
    await eventually(lambda: len(pair.primary.requests) > asked, interval=0.01, what="the trial request")
    assert len(pair.primary.requests) == asked + 1
    started = time.monotonic()
    events = await pair.stream("meanwhile", "t2")
    assert text_of(events) == "Echo: meanwhile" and time.monotonic() - started < 0.9  # not held up by the trial
    assert len(pair.primary.requests) == asked + 1
    events = await trial
    assert text_of(events) == "Echo: trial" and (await pair.state("primary"))["state"] == "cooldown"


def test_each_failed_trial_doubles_the_rest_up_to_the_five_minute_cooldown() -> None:
    from platform_server.features.models.runtime import MAX_COOLDOWN_S, ProviderPool

    now = [1000.0]
    pool = ProviderPool(clock=lambda: now[0], probe_interval_s=30)
    rests = []
    for _ in range(3):
        pool.failure("p", "down")
    for _ in range(6):  # the circuit is open: wait for the trial, let it fail, note how long the next rest is
        until = pool.cooling_until("p")
        assert until is not None and not pool.admit("p")
        rests.append(until - now[0])
        now[0] = until
        assert pool.admit("p")  # the trial
        pool.failure("p", "still down")
    assert rests == [30, 60, 120, 240, 300, 300] and MAX_COOLDOWN_S == 300
    now[0] = pool.cooling_until("p") or now[0]
    assert pool.admit("p")
    pool.success("p")
    assert pool.cooling_until("p") is None and pool.admit("p")
