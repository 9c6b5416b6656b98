"""Start: no conversation stays running; the chat runtime and its housekeeping loop."""
from __future__ import annotations

from typing import Any

from platform_server.features.chat.runtime import ChatRuntime
from platform_server.features.conversations import service as conversations
from platform_server.loops import Loop


class ReplayPruneLoop(Loop):
    """Forget finished turns once their replay window has passed."""

    interval_s = 30.0

    def __init__(self, runtime: ChatRuntime) -> None:
        super().__init__()
        self.runtime = runtime

    def tick(self) -> int:
        return self.runtime.turns.prune()


async def start(platform: Any) -> None:
    conversations.reset_running()
    runtime = ChatRuntime(platform)
    platform.services["chat"] = runtime
    loop = ReplayPruneLoop(runtime)
    platform.services["chat.prune"] = loop
    loop.start()


async def stop(platform: Any) -> None:
    loop = platform.services.pop("chat.prune", None)
    if loop is not None:
        loop.stop()
    runtime = platform.services.pop("chat", None)
    if runtime is not None:
        await runtime.stop_all()
