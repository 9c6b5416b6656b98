"""Start the wiki engine (resuming queued materials) and register the `wiki_search` tool."""
from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.wiki import tool
from platform_server.features.wiki.engine import WikiEngine

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:
    engine = WikiEngine(platform, platform.config.wiki_workers)
    platform.services.wiki = engine
    platform.services.tools.register(tool.definition(platform))
    engine.start()


async def stop(platform: Platform) -> None:
    await platform.services.wiki.stop()
