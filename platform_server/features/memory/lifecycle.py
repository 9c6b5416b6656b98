"""Start: the dream runner (`platform.services.memory`) and the nightly dream loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.memory.dreaming import Dreamer
from platform_server.features.memory.extraction import IdleExtractionLoop
from platform_server.features.memory.schedule import NightlyDreamLoop
from platform_server.features.agents.service import move_private_memory

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:

    move_private_memory(platform.config)  # once, before serving: memory left the shared workspace
    dreamer = Dreamer(platform)
    platform.services.memory = dreamer
    loop = NightlyDreamLoop(dreamer)
    platform.services.memory_nightly = loop
    loop.start()
    extraction = IdleExtractionLoop(platform)
    platform.services.memory_extraction = extraction
    if platform.config.memory_extract_tick_s > 0:
        extraction.start()


async def stop(platform: Platform) -> None:
    platform.services.memory_extraction.stop()
    platform.services.memory_nightly.stop()
    await platform.services.memory.stop()
