"""Start: no conversation stays running; the chat service, handed its collaborators, and its housekeeping loop."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from platform_server import storage
from platform_server.features.chat.service import ChatService
from platform_server.features.chat.store import TurnStore
from platform_server.features.conversations import service as conversations
from platform_server.features.wiki import retrieval
from platform_server.loops import Loop

if TYPE_CHECKING:
    from platform_server.app import Platform


class ReplayPruneLoop(Loop):
    """Forget finished turns once their replay window has passed."""

    interval_s = 30.0

    def __init__(self, runtime: ChatService) -> None:
        super().__init__()
        self.runtime = runtime

    def tick(self) -> int:
        return self.runtime.turns.prune()


async def start(platform: Platform) -> None:
    storage.start_write(platform.storage, "setting conversations left running idle", conversations.reset_running)
    skills = getattr(platform.services, "skills", None)  # started before chat (`needs`); absent in a bare test platform
    runtime = ChatService(
        platform.config,
        platform.services.llm,
        platform.services.tools,
        TurnStore(platform.storage.note_fault),
        functools.partial(retrieval.for_turn, platform),
        skills.key if skills is not None else None,
    )
    platform.services.chat = runtime
    loop = ReplayPruneLoop(runtime)
    platform.services.chat_prune = loop
    loop.start()


async def stop(platform: Platform) -> None:
    platform.services.chat_prune.stop()
    await platform.services.chat.stop_all()
