"""Seed the built-in ACP endpoints (disabled until an admin enables them)."""
from __future__ import annotations

from typing import Any

from platform_server.features.acp import service


async def start(platform: Any) -> None:
    service.seed_builtins()
