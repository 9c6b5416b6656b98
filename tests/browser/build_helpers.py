"""Shared setup of the build-page browser tests: the scripted model as default and an agent of the admin."""
from __future__ import annotations

import re
from typing import Any

from playwright.async_api import expect

from tests.helpers.chat import ChatEnv, make_agent
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer


async def admin_env(server: RunningServer, admin: dict[str, Any], llm: ScriptedOpenAI, name: str = "Helper") -> ChatEnv:
    """The scripted model as the default and one agent, both the admin's (token "admin")."""
    await use_fake_openai(server.client, llm.url, token="admin")
    agent = await make_agent(server.client, token="admin", name=name)
    return ChatEnv(server.client, llm, {"admin": {"id": admin["id"]}}, agent)


async def toast(page: Any, text: str) -> None:
    """A toast whose text starts with `text` is showing."""
    await expect(page.locator(".toast").filter(has_text=re.compile("^" + re.escape(text))).last).to_be_visible()


async def bound(server: RunningServer, agent_id: str, kind: str = "tools") -> list[str]:
    """Tool names (or skill ids) bound to an agent, from the API's rows."""
    r = await server.client.get(f"/api/v1/agents/{agent_id}/{kind}", token="admin")
    assert r.status == 200, r.body
    key = "toolName" if kind == "tools" else "skillId"
    return [row[key] for row in r.data]
