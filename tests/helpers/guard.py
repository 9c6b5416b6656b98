"""Guard test setup: callers for the service API and conversations stored directly (no model needed)."""
from __future__ import annotations

from typing import Any

from platform_server.features.conversations.models import Conversation
from platform_server.features.conversations.service import key_for
from platform_server.features.guard.service import GuardContext
from platform_server.web.context import Caller, Principal


def caller(person: dict[str, Any], username: str, workspace_id: int = 1, role: str | None = "member",
           global_admin: bool = False) -> Caller:
    principal = Principal(int(person["id"]), username, "admin" if global_admin else "user", "jwt")
    return Caller(principal, workspace_id, "owner" if global_admin else role)


def conversation(user_id: Any, conversation_id: str, workspace_id: int = 1, agent_id: Any = None) -> Conversation:
    return Conversation.create(
        key=key_for(int(user_id), conversation_id), conversation_id=conversation_id, user_id=int(user_id),
        workspace_id=workspace_id, agent_id=None if agent_id is None else int(agent_id),
    )


def ctx(user_id: Any, conversation_id: str = "c1", agent_id: Any = 77, workspace_id: int = 1) -> GuardContext:
    return GuardContext(int(user_id), workspace_id, int(agent_id), conversation_id)
