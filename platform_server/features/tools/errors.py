"""Errors of the tools area (codes from the spec's error table)."""

from __future__ import annotations

from platform_server.web.errors import ApiError


class ToolNotFound(ApiError):
    code = 3001
    default_msg = "Tool not found"
