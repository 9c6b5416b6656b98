"""Start: no conversation stays running; the chat service, handed its collaborators, and its housekeeping loop."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from platform_server import leases, storage
from platform_server.features.chat import CHAT, CHAT_ORPHANS, CHAT_PRUNE, remote
from platform_server.features.chat.service import ChatService
from platform_server.features.chat.store import TurnStore, keep_queued
from platform_server.features.conversations import service as conversations
from platform_server.features.models import LLM
from platform_server.features.skills import SKILLS
from platform_server.features.tools import TOOLS
from platform_server.features.wiki import retrieval
from platform_server.loops import Loop
from platform_server.ports import events

if TYPE_CHECKING:
    from platform_server.platform import Platform

log = logging.getLogger(__name__)


class ReplayPruneLoop(Loop):
    """Forget finished turns once their replay window has passed."""

    interval_s = 30.0
    leader_only = False  # the turns this process ran: each process prunes its own

    def __init__(self, runtime: ChatService) -> None:
        super().__init__()
        self.runtime = runtime

    def tick(self) -> int:
        return self.runtime.turns.prune()


async def start(platform: Platform) -> None:
    # Several processes (`redis_url`): a conversation another living process runs a turn of stays running
    live = await remote.live_at_start()
    storage.start_write(platform.storage, "setting conversations left running idle", functools.partial(conversations.reset_running, live))
    # their follow-ups queued behind the turn a stopped process ran are kept as messages (stored when accepted)
    storage.start_write(platform.storage, "keeping messages queued for turns that ended", keep_queued)
    skills = platform.find_runtime(SKILLS)  # started before chat (`needs`); absent in a bare test platform
    runtime = ChatService(
        platform.config,
        platform.runtime(LLM),
        platform.runtime(TOOLS),
        TurnStore(platform.storage.note_fault),
        functools.partial(retrieval.for_turn, platform),
        skills.key if skills is not None else None,
    )
    platform.set_runtime(CHAT, runtime)
    loop = ReplayPruneLoop(runtime)
    platform.set_runtime(CHAT_PRUNE, loop)
    loop.start()
    if platform.config.redis_url:  # several processes: asks about this process's turns, the sweep of dead ones
        events.current().answer(remote.PREFIX, functools.partial(remote.answer, runtime))
        sweep = leases.start_sweep(platform.config, remote.turn_kind(runtime))
        assert sweep is not None
        platform.set_runtime(CHAT_ORPHANS, sweep)


async def drain(platform: Platform, timeout_s: float) -> int:
    """A graceful stop lets running turns finish (up to `timeout_s`); returns how many are still running."""
    chat = platform.runtime(CHAT)
    log.info("stopping: waiting up to %.0f s for %d running turn(s)", timeout_s, len(chat.turns.running()))
    return await chat.drain(timeout_s)


async def stop(platform: Platform) -> None:
    platform.runtime(CHAT_PRUNE).stop()
    sweep = platform.find_runtime(CHAT_ORPHANS)
    if sweep is not None:
        sweep.stop()
    await platform.runtime(CHAT).stop_all()
