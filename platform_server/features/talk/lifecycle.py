"""The registry of open talk sessions (`platform.services["talk"]`)."""
from __future__ import annotations

import asyncio
from typing import Any

from platform_server.features.talk.session import TalkRegistry


async def start(platform: Any) -> None:
    platform.services["talk"] = TalkRegistry()


async def stop(platform: Any) -> None:
    registry = platform.services.pop("talk", None)
    if registry is not None and registry.closing:
        await asyncio.gather(*registry.closing, return_exceptions=True)
