"""The registry of open talk sessions (`platform.runtime(TALK)`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from platform_server.features.talk import TALK
from platform_server.features.talk.session import TalkRegistry

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    platform.set_runtime(TALK, TalkRegistry())


async def stop(platform: Platform) -> None:
    closing = platform.runtime(TALK).closing
    if closing:
        await asyncio.gather(*closing, return_exceptions=True)
