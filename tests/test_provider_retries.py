"""A provider that is briefly busy is tried again, after a backoff or its Retry-After, before its failure counts:
a rate limit or a 5xx no longer takes chat down, and nothing is ever sent twice once content has streamed."""
from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest

from platform_server.features.models.runtime import resolve_targets
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError
from tests.helpers.chat import ChatEnv, names, text_of
from tests.helpers.fake_openai import Script
from tests.helpers.server import RunningServer, free_port
from tests.helpers.models import use_fake_openai

RETRIES = {"llm_retry_attempts": 2, "llm_retry_max_backoff_s": 5.0}


class Waits:
    """Stands in for asyncio.sleep in the router's retry policy: records each wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def waits(server: RunningServer) -> Waits:
    recorder = Waits()
    server.platform.services.llm.retry.sleep = recorder
    return recorder


async def pool(env: ChatEnv) -> dict[str, dict[str, Any]]:
    r = await env.api.get("/api/v1/llm/provider-pool", token="alice")
    assert r.status == 200, r.body
    return {e["providerId"]: e for e in r.data}


@pytest.mark.config(**RETRIES)
async def test_a_provider_answering_429_twice_then_200_gives_a_normal_answer_with_no_cooldown(env: ChatEnv, server: RunningServer) -> None:
    recorded = waits(server)
    env.llm.enqueue(Script(error_status=429, error_message="slow down", retry_after="1"),
                    Script(error_status=429, error_message="slow down", retry_after="2"),
                    Script(text="all good"))
    events = await env.stream("hello")
    assert "error" not in names(events) and text_of(events) == "all good"
    assert events[-1].data["status"] == "completed"
    assert len(env.llm.requests) == 3
    assert recorded.waits == [1.0, 2.0]  # the provider's Retry-After, honoured
    state = (await pool(env))["fake"]
    assert state["state"] == "healthy" and state["consecutiveFailures"] == 0 and state["cooldownUntil"] is None

    for _ in range(3):  # three turns that each meet two 5xx in a row: none of them counts
        env.llm.enqueue(Script(error_status=503), Script(error_status=502), Script(text="fine"))
        assert text_of(await env.stream("again")) == "fine"
    assert (await pool(env))["fake"]["consecutiveFailures"] == 0


@pytest.mark.config(llm_retry_attempts=2, llm_retry_max_backoff_s=3.0)
async def test_retry_after_as_an_http_date_is_honoured_and_capped_and_backoff_grows_with_jitter(env: ChatEnv, server: RunningServer) -> None:
    recorded = waits(server)
    soon = email.utils.formatdate(time.time() + 60, usegmt=True)  # a minute away: cut to the cap
    env.llm.enqueue(Script(error_status=429, retry_after=soon), Script(error_status=500), Script(text="done"))
    assert text_of(await env.stream("hi")) == "done"
    assert recorded.waits[0] == 3.0
    assert 0.5 <= recorded.waits[1] <= 1.0  # the second retry's backoff (0.5 s doubled) with jitter
    assert (await pool(env))["fake"]["consecutiveFailures"] == 0


@pytest.mark.config(**RETRIES)
async def test_retries_that_run_out_count_once_and_a_client_error_is_not_retried(env: ChatEnv, server: RunningServer) -> None:
    recorded = waits(server)
    env.llm.enqueue(*[Script(error_status=429, error_message="quota") for _ in range(3)])
    events = await env.stream("hello")
    assert "error" in names(events)
    assert len(env.llm.requests) == 3 and len(recorded.waits) == 2
    state = (await pool(env))["fake"]  # a rate limit counts once, against the model
    assert state["consecutiveFailures"] == 0
    assert [(m["modelName"], m["consecutiveFailures"]) for m in state["models"]] == [("scripted", 1)]

    env.llm.enqueue(Script(error_status=400, error_message="bad request"))
    assert "error" in names(await env.stream("again"))
    assert len(env.llm.requests) == 4 and len(recorded.waits) == 2  # a 400 blames the request: asked once


@pytest.mark.config(llm_retry_attempts=2, llm_retry_max_backoff_s=5.0, llm_idle_timeout_s=0.3)
async def test_a_failure_after_content_streamed_is_never_sent_again(env: ChatEnv, server: RunningServer) -> None:
    recorded = waits(server)
    env.llm.enqueue(Script(text="partial answer here", hang_after_chunks=2))
    events = await env.stream("hello")
    assert "error" in names(events) and text_of(events).startswith("partial")
    assert len(env.llm.requests) == 1 and recorded.waits == []


@pytest.mark.config(llm_retry_attempts=0)
async def test_the_setting_of_zero_attempts_fails_at_once(server: RunningServer, env: ChatEnv) -> None:
    recorded = waits(server)
    env.llm.enqueue(Script(error_status=429), Script(text="not reached"))
    assert "error" in names(await env.stream("hello"))
    assert len(env.llm.requests) == 1 and recorded.waits == []


@pytest.mark.config(**RETRIES)
async def test_a_refused_connection_is_retried_and_whole_calls_retry_too(env: ChatEnv, server: RunningServer) -> None:
    recorded = waits(server)
    await use_fake_openai(env.api, f"http://127.0.0.1:{free_port()}/v1", provider_id="gone", model="g-model")
    router = server.platform.services.llm
    with pytest.raises(LlmError, match="cannot connect"):
        await router.chat(resolve_targets(None, None, []), ChatRequest(model="", messages=[ChatMessage("user", "hi")]))
    assert len(recorded.waits) == 2  # a connection that failed: tried three times

    env.llm.enqueue(Script(error_status=503), Script(text="whole answer"))
    target, result = await router.chat(resolve_targets("scripted", "fake", []), ChatRequest(model="", messages=[ChatMessage("user", "hi")]))
    assert result.content == "whole answer" and len(recorded.waits) == 3
