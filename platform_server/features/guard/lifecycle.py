"""Start: the pending-approval expiry comes from config."""
from __future__ import annotations

from typing import Any

from platform_server.features.guard import service


async def start(platform: Any) -> None:
    service.configure(platform.config.approval_expiry_s)
