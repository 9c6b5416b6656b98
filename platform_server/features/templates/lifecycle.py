"""Seed the built-in agent templates at start."""
from __future__ import annotations

from typing import Any

from platform_server.features.templates import service


async def start(platform: Any) -> None:
    service.seed()
