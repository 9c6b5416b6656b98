"""Seed the built-in ACP endpoints (disabled until an admin enables them)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.acp import service

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:
    service.seed_builtins()
