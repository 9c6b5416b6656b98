"""The channel reply workers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.channels import CHANNELS
from platform_server.features.channels.runtime import ChannelRuntime
from platform_server.features.chat import CHAT

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    runtime = ChannelRuntime(platform.runtime(CHAT), platform.config)
    platform.set_runtime(CHANNELS, runtime)
    runtime.start_gateways()


async def stop(platform: Platform) -> None:
    await platform.runtime(CHANNELS).stop()
