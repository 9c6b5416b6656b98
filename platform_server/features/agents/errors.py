"""Errors of the agents area (codes from the spec's error table)."""

from __future__ import annotations

from platform_server.web.errors import ApiError


class AgentNotFound(ApiError):
    code = 1001
    default_msg = "Agent not found"
