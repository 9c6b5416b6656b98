"""Start: the pending-approval expiry comes from config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.guard import service

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    service.configure(platform.config.approval_expiry_s)
