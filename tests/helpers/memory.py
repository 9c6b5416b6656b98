"""Memory test helpers: a conversation to summarize, scripted fact extraction, the scope's files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script


def base(env: ChatEnv) -> str:
    return f"/api/v1/memory/{env.agent_id}"


def folder(server: Any, env: ChatEnv, user: str = "alice", end_user: str | None = None) -> Path:
    """The memory folder of a person (and end user) in the agent's private folder (outside its workspace)."""
    root = Path(server.config.data_dir) / "agents" / env.agent_id / "private" / "memory" / "people"
    path = root / env.people[user]["id"]
    return path / "users" / end_user if end_user else path


async def summarize(env: ChatEnv, facts: list[dict[str, Any]], conversation_id: str = "c1", token: str = "alice",
                    message: str | None = "Remember this please", **chat: Any) -> Any:
    """Chat once in the conversation (echo answer), then summarize it with the scripted facts."""
    if message is not None:
        events = await env.stream(message, token=token, conversation_id=conversation_id, **chat)
        assert events[-1].event == "done", events
    env.llm.enqueue(Script(text=json.dumps(facts)))
    return await env.api.post(f"{base(env)}/summarize/{conversation_id}", token=token)


def fact(key: str, statement: str, confidence: float = 0.9) -> dict[str, Any]:
    return {"key": key, "statement": statement, "confidence": confidence}


def dream_answer(summary: str, *entries: dict[str, Any]) -> Script:
    return Script(text=json.dumps({"summary": summary, "entries": list(entries)}))
