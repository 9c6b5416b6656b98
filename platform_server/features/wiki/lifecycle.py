"""Start the wiki engine (resuming queued materials) and register the `wiki_search` tool."""
from __future__ import annotations

from typing import Any

from platform_server.features.wiki import tool
from platform_server.features.wiki.engine import WikiEngine


async def start(platform: Any) -> None:
    engine = WikiEngine(platform, platform.config.wiki_workers)
    platform.services["wiki"] = engine
    if "tools" in platform.services:
        platform.services["tools"].register(tool.definition(platform))
    engine.start()
    await engine.watchers.start()


async def stop(platform: Any) -> None:
    engine = platform.services.pop("wiki", None)
    if engine is not None:
        await engine.stop()
