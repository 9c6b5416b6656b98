"""Errors of the model calls (codes from the spec's error table)."""

from __future__ import annotations

from platform_server.web.errors import ApiError


class LlmFailure(ApiError):
    code = 2001
    default_msg = "LLM error"
