"""Start: the dream runner (`platform.services["memory"]`) and the nightly dream loop."""
from __future__ import annotations

from typing import Any

from platform_server.features.memory.dreaming import Dreamer
from platform_server.features.memory.schedule import NightlyDreamLoop


async def start(platform: Any) -> None:
    from platform_server.features.agents.service import move_private_memory

    move_private_memory(platform.config)  # once, before serving: memory left the shared workspace
    dreamer = Dreamer(platform)
    platform.services["memory"] = dreamer
    loop = NightlyDreamLoop(dreamer)
    platform.services["memory.nightly"] = loop
    loop.start()


async def stop(platform: Any) -> None:
    loop = platform.services.pop("memory.nightly", None)
    if loop is not None:
        loop.stop()
    dreamer = platform.services.pop("memory", None)
    if dreamer is not None:
        await dreamer.stop()
