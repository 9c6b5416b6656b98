"""Seed the built-in agent templates at start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.templates import service

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    service.seed()
