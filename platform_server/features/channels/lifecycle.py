"""The channel reply workers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.channels.runtime import ChannelRuntime

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:
    platform.services.channels = ChannelRuntime(platform)
    platform.services.channels.start_gateways()


async def stop(platform: Platform) -> None:
    await platform.services.channels.stop()
