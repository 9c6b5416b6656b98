"""Kept for callers of the earlier name: the chat service (which runs turns) is `chat/service.py`."""

from __future__ import annotations

from platform_server.features.chat.service import ChatRuntime, ChatService, TurnRequest

__all__ = ["ChatRuntime", "ChatService", "TurnRequest"]
