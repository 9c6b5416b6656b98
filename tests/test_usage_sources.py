"""Usage of every model call: chat, wiki processing, memory and the rest are recorded with their source."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script
from tests.helpers.memory import fact, summarize
from tests.helpers.wiki import add_text, make_kb, page, pages_answer, wait_idle


def sources(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i["source"]: i for i in items}


async def test_wiki_processing_memory_and_chat_calls_are_counted_under_their_source(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="hi there", prompt_tokens=11, completion_tokens=2))
    await env.stream("hello", conversation_id="u1")
    kb_id = await make_kb(env.api, token="alice")
    env.llm.enqueue(Script(text=pages_answer(page("tea", "Tea", "# Tea\n\nA drink.")), prompt_tokens=100,
                           completion_tokens=40))
    await add_text(env.api, kb_id, "Drinks", "Tea is a drink made from leaves.", token="alice")
    await wait_idle(env.api, kb_id)
    r = await summarize(env, [fact("drink", "Likes tea")], conversation_id="u1", message=None)
    assert r.status == 200, r.body

    usage = (await env.api.get("/api/v1/token-usage", params={"groupBy": "source"}, token="alice")).data
    by = sources(usage["items"])
    assert by["chat"]["promptTokens"] == 11 and by["chat"]["completionTokens"] == 2
    assert by["wiki"]["promptTokens"] >= 100 and by["wiki"]["completionTokens"] == 40  # generation + embeddings
    assert by["wiki"]["calls"] >= 2
    assert by["memory"]["calls"] == 1 and by["memory"]["totalTokens"] > 0
    assert usage["total"]["totalTokens"] == sum(i["totalTokens"] for i in usage["items"])
    assert {k: v["totalTokens"] for k, v in sources(usage["bySource"]).items()} == {
        k: v["totalTokens"] for k, v in by.items()}

    overview = (await env.api.get("/api/v1/dashboard/stats", token="carol")).data
    assert {s["source"] for s in overview["total"]["bySource"]} >= {"chat", "wiki", "memory"}
    assert overview["total"]["totalTokens"] == usage["total"]["totalTokens"]
    day = (await env.api.get("/api/v1/dashboard/trend", params={"days": "1"}, token="carol")).data[-1]
    assert day["bySource"]["wiki"] == by["wiki"]["totalTokens"] and day["totalTokens"] == usage["total"]["totalTokens"]

    dave = env.people["dave"]
    other = await env.api.get("/api/v1/token-usage", params={"groupBy": "source"}, token="dave",
                              workspace=dave["workspace"])
    assert other.data["items"] == [] and other.data["total"]["totalTokens"] == 0
