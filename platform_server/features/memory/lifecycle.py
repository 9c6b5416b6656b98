"""Start: the dream runner (`platform.runtime(DREAMER)`) and the nightly dream loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.agents.service import move_private_memory
from platform_server.features.memory import DREAMER, MEMORY_EXTRACTION, MEMORY_NIGHTLY
from platform_server.features.memory.dreaming import Dreamer
from platform_server.features.memory.extraction import IdleExtractionLoop
from platform_server.features.memory.schedule import NightlyDreamLoop
from platform_server.features.models import LLM

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:

    move_private_memory(platform.config)  # once, before serving: memory left the shared workspace
    dreamer = Dreamer(platform.runtime(LLM), platform.config)
    platform.set_runtime(DREAMER, dreamer)
    loop = NightlyDreamLoop(dreamer)
    platform.set_runtime(MEMORY_NIGHTLY, loop)
    loop.start()
    extraction = IdleExtractionLoop(platform.runtime(LLM), platform.config)
    platform.set_runtime(MEMORY_EXTRACTION, extraction)
    if platform.config.memory_extract_tick_s > 0:
        extraction.start()


async def stop(platform: Platform) -> None:
    platform.runtime(MEMORY_EXTRACTION).stop()
    platform.runtime(MEMORY_NIGHTLY).stop()
    await platform.runtime(DREAMER).stop()
