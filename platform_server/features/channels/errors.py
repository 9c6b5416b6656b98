"""Errors of the channels area (codes from the spec's error table)."""

from __future__ import annotations

from platform_server.web.errors import ApiError


class ChannelError(ApiError):
    code = 4001
    default_msg = "Channel error"
