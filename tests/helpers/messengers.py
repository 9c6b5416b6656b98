"""Shared steps of the messaging platform tests (tests/test_channel_<platform>.py)."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.helpers.server import RunningServer


async def settle(server: RunningServer) -> None:
    """Wait until every chat turn of the process has finished."""
    runtime = server.platform.services.chat
    for _ in range(3000):  # up to 30 s on a busy machine; usually a few ticks
        if not runtime.turns.running():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("a turn kept running")


async def platform_channel(env: ChatEnv, kind: str, base_url: str, secret: str | None = None, **settings: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": f"my {kind}", "channelType": kind, "agentId": env.agent_id,
                            "settings": {"apiBaseUrl": base_url, **settings}}
    if secret is not None:
        body["secret"] = secret
    r = await env.api.post("/api/v1/channels", body, token="alice")
    assert r.status == 200, r.body
    return r.data


def stored_rows() -> dict[str, int]:
    """Conversations, messages and seen inbound ids in the database: a refused call adds none."""
    from platform_server.features.channels.models import InboundMessage
    from platform_server.features.conversations.models import Conversation, Message

    return {"conversations": Conversation.select().count(), "messages": Message.select().count(),
            "inbound": InboundMessage.select().count()}


def write_call(name: str = "note.txt", content: str = "hello") -> Script:
    return Script(tool_calls=[ScriptedToolCall("write_file", {"path": name, "content": content})])


def workspace_file(server: RunningServer, agent_id: str, name: str) -> Path:
    return Path(server.config.data_dir) / "agents" / agent_id / "workspace" / name
