"""Every model and embedding call is metered with its workspace and a source of its own: research,
transformations, enrich/repair and agent generation no longer land in `other` with no workspace, and
embedding tokens are the provider's (or the local tokenizer's) count, not a length guess."""
from __future__ import annotations

import json
from typing import Any

from platform_server.features.usage import meter
from platform_server.integrations.llm.local import find_default_embedding_model
from platform_server.integrations.llm import make_client
from platform_server.integrations.static_embeddings import StaticModel
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer
from tests.helpers.wiki import add_text, make_kb, page, pages_answer, use_fake_wiki_models, wait_idle

T = "/api/v1/wiki/transformations"


async def usage(api: ApiClient, group: str, token: str = "alice", **kw: Any) -> dict[str, dict[str, Any]]:
    r = await api.get("/api/v1/token-usage", params={"groupBy": group}, token=token, **kw)
    assert r.status == 200, r.body
    key = {"source": "source", "model": "model"}[group]
    return {i[key]: i for i in r.data["items"]}


async def transform_done(api: ApiClient, run_id: str) -> None:
    async def completed() -> bool:
        return (await api.get(f"{T}/runs/{run_id}", token="bob")).data["status"] == "completed"

    await eventually(completed, what="the transformation run completed")


async def test_research_transform_enrich_repair_and_agent_generation_are_metered_in_the_workspace(
    api: ApiClient, people: dict, llm: ScriptedOpenAI
) -> None:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Astronomy")
    llm.enqueue(Script(text=pages_answer(page("saturn", "Saturn", "# Saturn\n\nSaturn has [[rings]] and [[phoebe]].", ["c1"]),
                                         page("rings", "Rings", "# Rings\n\nIce.", ["c1"]))))
    raw = await add_text(api, kb, "Planets", "Saturn is a gas giant with rings made of ice and rock.")
    await wait_idle(api, kb)

    llm.enqueue(Script(text=json.dumps({"queries": ["saturn rings"]}), prompt_tokens=7, completion_tokens=1),
                Script(text=json.dumps({"findings": [], "nextQueries": []}), prompt_tokens=7, completion_tokens=1),
                Script(text="# Rings\n\nIce [c1].", prompt_tokens=7, completion_tokens=1))
    r = await api.post("/api/v1/wiki/research/start", {"kbId": kb, "question": "What are the rings?"}, token="bob")
    assert r.status == 200, r.body
    events = await api.sse("GET", f"/api/v1/wiki/research/stream/{r.data['sessionId']}", token="bob", timeout=30)
    assert events[-1].event == "done", [e.event for e in events]

    t = await api.post(T, {"name": "Key points", "prompt": "Key points of {{title}}:\n{{content}}"}, token="bob")
    llm.enqueue(Script(text="- gas giant", prompt_tokens=5, completion_tokens=3))
    run = await api.post(f"{T}/{t.data['id']}/apply", {"kbId": kb, "rawId": raw["id"]}, token="bob")
    await transform_done(api, run.data["id"])

    llm.enqueue(Script(text="# Saturn\n\nSaturn, a giant, has [[rings]] and [[phoebe]].", prompt_tokens=11, completion_tokens=4))
    assert (await api.post(f"/api/v1/wiki/kb/{kb}/pages/saturn/enrich", {}, token="bob")).status == 200
    llm.enqueue(Script(text="# Saturn\n\nSaturn, a giant, has [[rings]].", prompt_tokens=13, completion_tokens=6))
    assert (await api.post(f"/api/v1/wiki/kb/{kb}/pages/saturn/repair", token="bob")).status == 200
    draft = {"name": "Filer", "icon": "x", "description": "d", "agentType": "react", "systemPrompt": "p"}
    llm.enqueue(Script(text=json.dumps(draft), prompt_tokens=17, completion_tokens=9))
    assert (await api.post("/api/v1/agents/generate", {"requirement": "someone to file invoices"}, token="bob")).status == 200

    by = await usage(api, "source")
    assert "other" not in by, by["other"]
    assert by["research"]["calls"] >= 4  # plan, findings, report and the query's embedding
    assert by["research"]["completionTokens"] == 3
    assert (by["transform"]["calls"], by["transform"]["promptTokens"], by["transform"]["completionTokens"]) == (1, 5, 3)
    assert (by["wiki_enrich"]["calls"], by["wiki_enrich"]["promptTokens"], by["wiki_enrich"]["completionTokens"]) == (1, 11, 4)
    assert (by["wiki_repair"]["calls"], by["wiki_repair"]["promptTokens"], by["wiki_repair"]["completionTokens"]) == (1, 13, 6)
    assert (by["agent_generate"]["calls"], by["agent_generate"]["promptTokens"]) == (1, 17)
    bob = (await api.get("/api/v1/token-usage", params={"groupBy": "user"}, token="alice")).data["items"]
    assert any(i["userId"] == people["bob"]["id"] and i["totalTokens"] >= 17 + 9 for i in bob), bob  # the caller's id
    other = await usage(api, "source", token="dave", workspace=people["dave"]["workspace"])
    assert other == {}


async def test_embedding_tokens_are_the_providers_count_not_a_length_guess(
    server: RunningServer, api: ApiClient, people: dict, llm: ScriptedOpenAI
) -> None:
    await use_fake_wiki_models(api, llm.url)
    text = "a b c d e f g h i j k l"  # 12 words (the fake provider's usage.prompt_tokens), 23 characters
    with meter.scope("wiki", 1):
        await server.platform.services.llm.embed([text])
    by = await usage(api, "model")
    assert by["fake-embedding"]["promptTokens"] == 12 and by["fake-embedding"]["calls"] == 1


async def test_the_local_embedding_model_counts_the_tokens_it_read() -> None:
    path = find_default_embedding_model()
    assert path, "the shipped local embedding model is installed with the project"
    texts = ["Saturn is a gas giant with rings of ice.", "Tokens, not characters divided by four!"]
    vectors, tokens = await make_client("local", "", None).embed_counted("tokenlearn-static-model", texts)  # through the worker
    expected = sum(len(StaticModel(path).tokenize(t)) for t in texts)
    assert len(vectors) == 2 and tokens == expected and tokens != sum(len(t) // 4 for t in texts)


async def test_a_model_call_is_counted_on_the_account_its_caller_passes_with_no_usage_scope_around_it(
    server: RunningServer, api: ApiClient, people: dict, llm: ScriptedOpenAI
) -> None:
    from platform_server.features.models.runtime import resolve_targets
    from platform_server.features.usage.models import UsageRecord
    from platform_server.integrations.llm import ChatMessage, ChatRequest

    await use_fake_openai(api, llm.url)
    router, targets = server.platform.services.llm, resolve_targets(None, None, [])
    assert meter.current() is None  # nothing labels the calls below but the account handed to the router
    account = meter.account("chat", 1, 2, 3, "explicit", hold=True)  # a turn's: held for its end commit
    llm.enqueue(Script(text="one", prompt_tokens=7, completion_tokens=2), Script(text=["two"], prompt_tokens=5, completion_tokens=1))
    await router.chat(targets, ChatRequest(model="", messages=[ChatMessage("user", "hi")]), account)
    async for _ in router.stream_chat(targets, ChatRequest(model="", messages=[ChatMessage("user", "hi")]), account):
        pass
    assert not UsageRecord.select().where(UsageRecord.conversation_id == "explicit").exists()  # held until the flush
    account.flush()
    rows = list(UsageRecord.select().where(UsageRecord.conversation_id == "explicit").order_by(UsageRecord.id))
    assert [(r.source, r.workspace_id, r.user_id, r.agent_id, r.prompt_tokens, r.completion_tokens) for r in rows] == [
        ("chat", 1, 2, 3, 7, 2), ("chat", 1, 2, 3, 5, 1)]
    llm.enqueue(Script(text="three", prompt_tokens=1, completion_tokens=1))
    await router.chat(targets, ChatRequest(model="", messages=[ChatMessage("user", "hi")]), account)  # after the flush: at once
    assert UsageRecord.select().where(UsageRecord.conversation_id == "explicit").count() == 3
