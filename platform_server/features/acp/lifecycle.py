"""Seed the built-in ACP endpoints (disabled until an admin enables them); register `acp_delegate`."""
from __future__ import annotations

from typing import Any

from platform_server.features.acp import delegate, service


async def start(platform: Any) -> None:
    service.seed_builtins()
    if "tools" in platform.services:
        platform.services["tools"].register(delegate.definition(platform))
