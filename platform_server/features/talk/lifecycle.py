"""The registry of open talk sessions (`platform.services.talk`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from platform_server.features.talk.session import TalkRegistry

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:
    platform.services.talk = TalkRegistry()


async def stop(platform: Platform) -> None:
    closing = platform.services.talk.closing
    if closing:
        await asyncio.gather(*closing, return_exceptions=True)
