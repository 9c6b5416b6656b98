"""Context that fits: every request stays within the model's window, older turns are compacted into a
stored summary that later turns reuse, long tool results are cut with a note, and a `context` event
says what was kept, summarised or cut."""
from __future__ import annotations

import json
from typing import Any

import pytest

from platform_server.blocking import run_blocking
from platform_server.config import Config
from platform_server.features.chat.context import CUT_NOTE, SUMMARY_HEADER, SUMMARY_INSTRUCTIONS, window_for
from platform_server.features.models.runtime import ModelTarget
from platform_server.integrations.llm.local import find_default_gguf
from platform_server.integrations.llm.tokens import MESSAGE_OVERHEAD, estimate
from tests.helpers.chat import ChatEnv, chat_env, text_of
from tests.helpers.client import ApiClient, SseEvent, iter_sse
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall

WORDS = "river stone lantern copper meadow violet harbor quiet thunder maple orbit canvas pepper silver garden".split()
SUMMARY_MARK = SUMMARY_INSTRUCTIONS.split(".")[0]  # "You compact conversations"


def long_text(seed: int, words: int) -> str:
    return " ".join(f"{WORDS[(seed * 7 + i) % len(WORDS)]}{(seed + i) % 10}" for i in range(words))


def is_summary_request(body: dict[str, Any]) -> bool:
    first = (body.get("messages") or [{}])[0]
    return first.get("role") == "system" and str(first.get("content") or "").startswith(SUMMARY_MARK)


def wire_tokens(body: dict[str, Any]) -> int:
    """What the provider received, measured with the platform's own counter (the scripted model is
    not the embedded one, so that counter is the estimate): every message's text, tool calls and
    name with the per-message overhead, and every tool's JSON."""
    total = 0
    for m in body["messages"]:
        content = m.get("content")
        text = "".join(p.get("text", "") for p in content if p.get("type") == "text") if isinstance(content, list) else content or ""
        calls = "".join(c["function"]["name"] + c["function"]["arguments"] for c in m.get("tool_calls") or [])
        total += MESSAGE_OVERHEAD + estimate(text + calls + (m.get("name") or ""))
    for tool in body.get("tools") or []:
        fn = tool["function"]
        total += MESSAGE_OVERHEAD + estimate(json.dumps({"name": fn["name"], "description": fn["description"], "parameters": fn["parameters"]}))
    return total


class CompactingModel(ScriptedOpenAI):
    """Answers summary requests with a numbered summary (or a scripted failure), chat requests from
    the queue, else with a short acknowledgement."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.summaries = 0
        self.fail_summaries = False

    def next_script(self) -> Script | None:
        body = self.requests[-1]  # recorded before the script is chosen
        if is_summary_request(body):
            if self.fail_summaries:
                return Script(error_status=400, error_message="summaries are switched off")
            self.summaries += 1
            return Script(text=f"SUMMARY-{self.summaries}: the user listed words; a file was read.")
        return super().next_script() or Script(text="Noted.")


@pytest.fixture
async def cllm() -> Any:
    server = CompactingModel()
    await server.start()
    yield server
    await server.stop()


async def set_window(api: ApiClient, tokens: int | None) -> None:
    """The default chat model's maxInputTokens, through the models API."""
    model_id = (await api.get("/api/v1/models/default", token="alice")).data["id"]
    r = await api.put("/api/v1/models/fake/models/context-window", {"modelId": model_id, "maxInputTokens": tokens}, token="alice")
    assert r.status == 200 and r.data["maxInputTokens"] == tokens, r.body


async def put_file(env: ChatEnv, path: str, content: str) -> None:
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/workspace/files/{path}", {"content": content}, token="alice")
    assert r.status == 200, r.body


async def reader_env(api: ApiClient, people: dict[str, Any], llm: ScriptedOpenAI) -> ChatEnv:
    """The scripted model as default and an agent offered read_file only."""
    env = await chat_env(api, people, llm)
    r = await api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["read_file"]}, token="alice")
    assert r.status == 200, r.body
    return env


def context_events(events: list[SseEvent]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.event == "context"]


def assert_answered(events: list[SseEvent], text: str = "Noted.") -> None:
    assert events[-1].event == "done" and events[-1].data["status"] == "completed", events[-1].data
    assert text_of(events) == text


async def test_a_long_conversation_with_a_1000_token_window_keeps_every_request_under_it_and_reuses_its_summary(
    api: ApiClient, people: dict[str, Any], cllm: CompactingModel
) -> None:
    env = await reader_env(api, people, cllm)
    await set_window(api, 1000)
    await put_file(env, "big.txt", long_text(99, 6000))  # about 40 KB
    seen: list[dict[str, Any]] = []
    turns = 16
    for i in range(turns):
        if i == 5:
            cllm.enqueue(Script(tool_calls=[ScriptedToolCall("read_file", {"path": "big.txt"}, id="call_big")]), Script(text="Read it."))
        events = await env.stream(f"Turn {i}. Remember these words: {long_text(i, 45)}")
        assert_answered(events, "Read it." if i == 5 else "Noted.")
        seen += context_events(events)

    chats = [b for b in cllm.requests if "messages" in b and not is_summary_request(b)]
    summaries = [b for b in cllm.requests if "messages" in b and is_summary_request(b)]
    assert len(chats) == turns + 1  # one model call per turn, two in the tool turn
    for body in cllm.requests:
        assert wire_tokens(body) < 1000, wire_tokens(body)
        assert len(json.dumps(body["messages"]) + json.dumps(body.get("tools") or [])) < 4500  # an independent bound
    for body in summaries:
        assert wire_tokens(body) + body["max_tokens"] <= 1000  # the summary itself fits with its answer
    # the newest turn is always sent whole, the tool turn's long result cut with a note
    assert "Turn 15. Remember" in json.dumps(chats[-1]["messages"])
    after_tool = chats[6]["messages"]
    result = next(m for m in after_tool if m["role"] == "tool")
    assert "characters cut to fit the model's context" in result["content"] and len(result["content"]) < 4000
    # compacted, not every turn: the stored summary is reused by the turns after it
    assert 1 <= cllm.summaries <= turns // 4
    users = [sum(m["role"] == "user" for m in body["messages"]) for body in chats]
    assert min(users) >= 1 and max(users) < turns
    with_first = [b for b in chats if "SUMMARY-1:" in b["messages"][0]["content"]]
    assert len(with_first) >= 2 and SUMMARY_HEADER.strip() in with_first[0]["messages"][0]["content"]
    if cllm.summaries >= 2:  # a later compaction folds the summary so far into the new one
        assert "SUMMARY-1:" in summaries[1]["messages"][1]["content"]
    # what the stream said
    assert seen, "no context event was streamed"
    assert any(e["summarised"]["new"] > 0 for e in seen) and any(e["truncated"]["messages"] >= 1 for e in seen)
    last = seen[-1]
    assert last["window"] == 1000 and last["tokens"] < 1000 and last["counter"] == "estimate"
    assert last["kept"]["messages"] >= 2 and last["summarised"]["messages"] > 0 and last["cut"]["messages"] == 0


async def test_a_500_token_window_and_a_64_kb_tool_result_no_longer_sends_22k_tokens(env: ChatEnv) -> None:
    await set_window(env.api, 500)
    huge = long_text(7, 9400)  # 64 KB: 22k tokens were sent
    await put_file(env, "huge.txt", huge)
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("read_file", {"path": "huge.txt"}, id="call_huge")]), Script(text="Done reading."))
    events = await env.stream("Read huge.txt and tell me what it says.")
    assert events[-1].data["status"] == "completed" and text_of(events) == "Done reading."
    assert len(env.llm.requests) == 2
    for body in env.llm.requests:
        assert wire_tokens(body) < 500, wire_tokens(body)
    result = next(m for m in env.llm.requests[1]["messages"] if m["role"] == "tool")
    assert result["tool_call_id"] == "call_huge" and "characters cut to fit" in result["content"]
    reports = context_events(events)
    assert reports and reports[-1]["truncated"]["messages"] == 1 and reports[-1]["truncated"]["tokens"] > 10_000
    assert reports[-1]["toolsDropped"]  # five tools' schemas alone do not leave room in 375 tokens
    # only the model's view is cut: the stream and the stored message keep the whole result
    completed = next(e.data for e in events if e.event == "tool_call_completed")
    stored = next(m for m in await env.messages() if m["role"] == "tool")
    assert completed["result"] == stored["content"] and stored["content"].startswith(huge[:60_000])
    assert [t["function"]["name"] for t in env.llm.requests[0].get("tools") or []] == [
        t["function"]["name"] for t in env.llm.requests[1].get("tools") or []
    ]


async def test_a_failed_summary_cuts_the_older_turns_with_a_note_and_the_conversation_goes_on(
    api: ApiClient, people: dict[str, Any], cllm: CompactingModel
) -> None:
    env = await reader_env(api, people, cllm)
    await set_window(api, 1000)
    cllm.fail_summaries = True
    cut_reports: list[dict[str, Any]] = []
    for i in range(8):
        events = await env.stream(f"Turn {i}. {long_text(i, 70)}")
        assert_answered(events)
        cut_reports += [e for e in context_events(events) if e["cut"]["messages"]]
    assert cut_reports and cut_reports[-1]["summarised"]["messages"] == 0
    last = [b for b in cllm.requests if not is_summary_request(b)][-1]
    assert wire_tokens(last) < 1000
    note = CUT_NOTE.split("{count}")[1]
    assert note in last["messages"][0]["content"] and "Turn 7." in json.dumps(last["messages"])


async def test_clearing_a_conversation_drops_its_summary(api: ApiClient, people: dict[str, Any], cllm: CompactingModel) -> None:
    env = await reader_env(api, people, cllm)
    await set_window(api, 1000)
    for i in range(8):
        await env.stream(f"Turn {i}. {long_text(i, 70)}")
    assert cllm.summaries >= 1
    assert (await api.delete("/api/v1/conversations/c1/messages", token="alice")).status == 200
    events = await env.stream("A fresh start.")
    assert_answered(events)
    assert "SUMMARY-" not in json.dumps(cllm.requests[-1]["messages"]) and not context_events(events)


async def test_a_conversation_that_fits_sends_everything_and_streams_no_context_event(env: ChatEnv) -> None:
    await set_window(env.api, 1000)
    for i in range(3):
        events = await env.stream(f"short {i}")
        assert "context" not in [e.event for e in events]
    assert [m["role"] for m in env.llm.requests[-1]["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]


@pytest.mark.config(chat_context_default_tokens=800)
async def test_a_model_without_max_input_tokens_gets_the_configured_default_window(env: ChatEnv) -> None:
    events = await env.stream("Please read this: " + long_text(3, 3000))
    assert events[-1].data["status"] == "completed"
    assert wire_tokens(env.llm.requests[-1]) < 800
    assert context_events(events)[-1]["window"] == 800


@pytest.mark.config(chat_answer_reserve_tokens=100)
async def test_the_answer_reserve_setting_decides_how_much_of_the_window_a_request_may_fill(
    api: ApiClient, people: dict[str, Any], llm: ScriptedOpenAI
) -> None:
    env = await reader_env(api, people, llm)
    await set_window(api, 1000)
    events = await env.stream("Please read this: " + long_text(3, 3000))
    assert events[-1].data["status"] == "completed"
    report = context_events(events)[-1]
    assert report["reserve"] == 100  # the default (4096, at most a quarter) would keep 250
    assert 750 < wire_tokens(env.llm.requests[-1]) <= 900


def _llama_available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _llama_available() or find_default_gguf() is None, reason="llama-cpp-python or the SmolLM2 GGUF is missing")
async def test_the_embedded_model_is_measured_with_its_own_tokenizer_and_keeps_room_for_its_answer() -> None:
    embedded = ModelTarget("local", "local", "", None, "", "text", None)
    remote = ModelTarget("fake", "openai", "http://127.0.0.1:9/v1", None, "scripted", "text", 1000)
    win = window_for(Config(), [embedded])
    assert win.counter.name == "llama.cpp" and win.tokens == 2048 and win.reserve == 528
    digits = "1234567890 " * 40  # SmolLM2 spends a token per digit: more than the estimate says
    tokens = await run_blocking(win.counter.count, digits)
    assert tokens > estimate(digits) and tokens >= 400
    mixed = window_for(Config(), [remote, embedded])  # a failover list: the smaller window, the safe counter
    assert mixed.counter.name == "estimate" and mixed.tokens == 1000


async def test_a_new_chat_that_compacts_within_its_first_turn_sends_that_summary_with_its_next_calls(
    api: ApiClient, people: dict[str, Any], cllm: CompactingModel
) -> None:
    """The first turn of a new conversation reads no summary (none can exist yet): inputs queued into that
    turn that outgrow the window are compacted there, and the calls after it carry the summary it stored."""
    env = await reader_env(api, people, cllm)
    await set_window(api, 1000)
    INPUTS = 14  # noqa: N806 - the first message and the ones queued into its turn
    cllm.enqueue(Script(text=[f"a{i} " for i in range(20)], delay_s=0.03))
    r = await api.session.post(
        api.base_url + "/api/v1/chat/stream",
        json={"agentId": env.agent_id, "conversationId": "c1", "message": f"Turn 0. Remember: {long_text(0, 45)}"},
        headers={"Authorization": "Bearer " + api.tokens["alice"]},
    )
    events: list[SseEvent] = []
    queued = False
    async for ev in iter_sse(r):
        events.append(ev)
        if ev.event == "content_delta" and not queued:
            queued = True
            for i in range(1, INPUTS):
                q = await api.post("/api/v1/chat/c1/interrupt", {"message": f"Turn {i}. Remember: {long_text(i, 45)}"}, token="alice")
                assert q.status == 200 and q.data["queued"] is True, q.body
    r.close()
    assert events[-1].event == "done" and events[-1].data["status"] == "completed"
    chats = [b for b in cllm.requests if "messages" in b and not is_summary_request(b)]
    assert len(chats) == INPUTS and cllm.summaries >= 1
    made = next(i for i, b in enumerate(cllm.requests) if "messages" in b and is_summary_request(b))
    after = [b for b in cllm.requests[made + 1 :] if "messages" in b and not is_summary_request(b)]
    # every call from the compaction on carries a summary, and some reuse the stored one instead of making another
    assert cllm.summaries < len(after), (cllm.summaries, len(after))
    for body in after:
        assert "SUMMARY-" in body["messages"][0]["content"], body["messages"][0]["content"][:200]
