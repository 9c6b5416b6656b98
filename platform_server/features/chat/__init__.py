"""Chat turns: the runtime that runs them (react and plan-execute loops, tool calls, approvals),
their streams and the routes that start, follow and stop them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.chat.service import ChatService
    from platform_server.loops import Loop


CHAT: RuntimeKey[ChatService] = RuntimeKey("chat")
CHAT_PRUNE: RuntimeKey[Loop] = RuntimeKey("chat_prune")
CHAT_ORPHANS: RuntimeKey[Loop] = RuntimeKey("chat_orphans")  # several processes: the leader frees a dead process's turns
