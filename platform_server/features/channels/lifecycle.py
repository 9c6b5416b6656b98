"""The channel reply workers."""
from __future__ import annotations

from typing import Any

from platform_server.features.channels.runtime import ChannelRuntime


async def start(platform: Any) -> None:
    platform.services["channels"] = ChannelRuntime(platform)


async def stop(platform: Any) -> None:
    runtime = platform.services.pop("channels", None)
    if runtime is not None:
        await runtime.stop()
