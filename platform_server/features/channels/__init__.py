"""External messaging channels: their settings, pairing, the webchat page and the runtime that turns
incoming messages into chat turns and sends the replies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.channels.runtime import ChannelRuntime


CHANNELS: RuntimeKey[ChannelRuntime] = RuntimeKey("channels")
