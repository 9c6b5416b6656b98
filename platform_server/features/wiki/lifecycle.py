"""Start the wiki engine (resuming queued materials) and register the `wiki_search` tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.tools import TOOLS
from platform_server.features.models import LLM
from platform_server.features.wiki import WIKI
from platform_server.features.guard import service as guard
from platform_server.features.wiki import agent_tools, tool, vector_index
from platform_server.features.wiki.engine import WikiEngine

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    vector_index.configure(platform.config.wiki_vector_cache_mb)
    engine = WikiEngine(platform.runtime(LLM), platform.config, platform.storage, platform.config.wiki_workers)
    platform.set_runtime(WIKI, engine)
    platform.runtime(TOOLS).register(tool.definition(platform.runtime(LLM)))
    for definition in agent_tools.definitions(platform.runtime(LLM)):
        platform.runtime(TOOLS).register(definition)
    guard.register_tool_hook("wiki_write", agent_tools.guard_hook)
    engine.start()
    await engine.watchers.start()


async def stop(platform: Platform) -> None:
    await platform.runtime(WIKI).stop()
