"""Chat test setup: personas, a scripted OpenAI-compatible model as the default, and an agent."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.helpers.client import ApiClient, SseEvent
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.models import use_fake_openai


@dataclass
class ChatEnv:
    api: ApiClient
    llm: ScriptedOpenAI
    people: dict[str, dict[str, Any]]
    agent_id: str

    async def stream(self, message: str | None = None, token: str = "alice", conversation_id: str = "c1",
                     **extra: Any) -> list[SseEvent]:
        body: dict[str, Any] = {"agentId": self.agent_id, "conversationId": conversation_id, **extra}
        if message is not None:
            body["message"] = message
        return await self.api.sse("POST", "/api/v1/chat/stream", body, token=token)

    async def messages(self, conversation_id: str = "c1", token: str = "alice") -> list[dict[str, Any]]:
        r = await self.api.get(f"/api/v1/conversations/{conversation_id}/messages", token=token)
        assert r.status == 200, r.body
        return r.data


async def make_agent(api: ApiClient, token: str = "alice", **fields: Any) -> str:
    body = {"name": "Helper", "systemPrompt": "You are a helpful test agent.", "agentType": "react", **fields}
    r = await api.post("/api/v1/agents", body, token=token)
    assert r.status == 200, r.body
    return r.data["id"]


async def chat_env(api: ApiClient, people: dict[str, dict[str, Any]], llm: ScriptedOpenAI, **agent_fields: Any) -> ChatEnv:
    await use_fake_openai(api, llm.url)
    return ChatEnv(api, llm, people, await make_agent(api, **agent_fields))


def names(events: list[SseEvent]) -> list[str]:
    return [e.event for e in events]


def text_of(events: list[SseEvent]) -> str:
    return "".join(e.data["delta"] for e in events if e.event == "content_delta")
