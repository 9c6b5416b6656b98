"""Start: the dream runner (`platform.runtime(DREAMER)`), the nightly dream loop, and the end of dreams a stopped
process left running."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server import leases, storage
from platform_server.features.agents.service import move_private_memory
from platform_server.features.memory import DREAMER, MEMORY_DREAM_SWEEP, MEMORY_EXTRACTION, MEMORY_NIGHTLY, dreaming
from platform_server.features.memory.dreaming import Dreamer
from platform_server.features.memory.extraction import IdleExtractionLoop
from platform_server.features.memory.schedule import NightlyDreamLoop
from platform_server.features.models import LLM
from platform_server.ports import leader

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
    if leader.is_leader():  # dreams a stopped process left running fail (a joining process leaves the others' alone)
        storage.start_write(platform.storage, "failing dreams left running", dreaming.fail_left_running)
    if sweep := leases.start_sweep(platform.config, dreaming.RUNS):  # several processes: a killed process's dreams fail
        platform.set_runtime(MEMORY_DREAM_SWEEP, sweep)


async def stop(platform: Platform) -> None:
    if sweep := platform.find_runtime(MEMORY_DREAM_SWEEP):
        sweep.stop()
    platform.runtime(MEMORY_EXTRACTION).stop()
    platform.runtime(MEMORY_NIGHTLY).stop()
    await platform.runtime(DREAMER).stop()
