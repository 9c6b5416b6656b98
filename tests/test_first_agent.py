"""A fresh install has an agent: setup creates "Assistant" on the default model, and a first message gets an answer."""
from __future__ import annotations

from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import PASSWORD


async def test_setup_creates_a_first_agent_on_the_default_model_that_answers(api: ApiClient, llm: ScriptedOpenAI) -> None:
    r = await api.post("/api/v1/setup/init", {"username": "root", "password": PASSWORD})
    assert r.status == 200, r.body
    api.tokens["root"] = r.data["token"]
    agents = (await api.get("/api/v1/agents", token="root")).data
    rows = agents["records"] if isinstance(agents, dict) else agents
    assert [a["name"] for a in rows] == ["Assistant"]
    first = rows[0]
    assert first["modelName"] == "" and first["creatorUserId"] == r.data["id"] and first["enabled"] is True
    await use_fake_openai(api, llm.url, token="root")  # the default model changes; the agent follows it
    llm.enqueue(Script(text="Hello, I am your assistant."))
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": first["id"], "conversationId": "first", "message": "hi"}, token="root")
    assert events[-1].event == "done", events
    assert "".join(e.data.get("delta", "") for e in events if isinstance(e.data, dict)) == "Hello, I am your assistant."
    assert events[-1].data["runtimeProvider"] == "fake"
