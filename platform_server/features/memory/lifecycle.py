"""Start: the dream runner (`platform.services["memory"]`) and the nightly dream loop."""
from __future__ import annotations

from typing import Any

from platform_server.features.memory.dreaming import Dreamer
from platform_server.features.memory.extraction import IdleExtractionLoop
from platform_server.features.memory.schedule import NightlyDreamLoop


async def start(platform: Any) -> None:
    dreamer = Dreamer(platform)
    platform.services["memory"] = dreamer
    loop = NightlyDreamLoop(dreamer)
    platform.services["memory.nightly"] = loop
    loop.start()
    extraction = IdleExtractionLoop(platform)
    platform.services["memory.extraction"] = extraction
    if platform.config.memory_extract_tick_s > 0:
        extraction.start()


async def stop(platform: Any) -> None:
    extraction = platform.services.pop("memory.extraction", None)
    if extraction is not None:
        extraction.stop()
    loop = platform.services.pop("memory.nightly", None)
    if loop is not None:
        loop.stop()
    dreamer = platform.services.pop("memory", None)
    if dreamer is not None:
        await dreamer.stop()
