"""Errors of the chat area (codes from the spec's error table)."""

from __future__ import annotations

from platform_server.web.errors import ApiError


class AgentBusy(ApiError):
    code = 1002
    default_msg = "Agent busy"
