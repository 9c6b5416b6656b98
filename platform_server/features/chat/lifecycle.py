"""Start: no conversation stays running; the chat runtime and its housekeeping loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server import storage
from platform_server.features.chat.runtime import ChatRuntime
from platform_server.features.conversations import service as conversations
from platform_server.loops import Loop

if TYPE_CHECKING:
    from platform_server.app import Platform


class ReplayPruneLoop(Loop):
    """Forget finished turns once their replay window has passed."""

    interval_s = 30.0
    leader_only = False  # the turns this process ran: each process prunes its own

    def __init__(self, runtime: ChatRuntime) -> None:
        super().__init__()
        self.runtime = runtime

    def tick(self) -> int:
        return self.runtime.turns.prune()


async def start(platform: Platform) -> None:
    storage.start_write(platform.storage, "setting conversations left running idle", conversations.reset_running)
    runtime = ChatRuntime(platform)
    platform.services.chat = runtime
    loop = ReplayPruneLoop(runtime)
    platform.services.chat_prune = loop
    loop.start()


async def stop(platform: Platform) -> None:
    platform.services.chat_prune.stop()
    await platform.services.chat.stop_all()
