"""Start the wiki engine (resuming queued materials) and register the `wiki_search` tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server import leases
from platform_server.features.guard import service as guard
from platform_server.features.models import LLM
from platform_server.features.tools.registry import ToolDefinition
from platform_server.features.wiki import WIKI, WIKI_SWEEP, WIKI_TRANSFORM_SWEEP, kbs, pgvector, tool, transform, vector_index
from platform_server.features.wiki import agent_tools as wiki_tools
from platform_server.features.wiki.engine import WikiEngine
from platform_server.ports import vectors

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    vector_index.configure(platform.config.wiki_vector_cache_mb)
    # pgvector when PostgreSQL has it (and the setting allows), else the in-process matrices; under the start's migration lock
    pgvector.choose(platform.config.wiki_vector_search)
    engine = WikiEngine(platform.runtime(LLM), platform.config, platform.storage, platform.config.wiki_workers)
    platform.set_runtime(WIKI, engine)
    guard.register_tool_hook("wiki_write", wiki_tools.guard_hook)
    engine.start()
    if sweep := leases.start_sweep(platform.config, engine.materials):  # several processes: a killed process's materials
        platform.set_runtime(WIKI_SWEEP, sweep)
    if sweep := leases.start_sweep(platform.config, transform.RUNS):  # and its transformation runs fail
        platform.set_runtime(WIKI_TRANSFORM_SWEEP, sweep)
    await engine.watchers.start()
    if kbs.any_kb():  # material may come at any moment: its embedding model loads now, in its own process
        engine.llm.preload_local_embedding()


def agent_tools(platform: Platform) -> list[ToolDefinition]:
    """`wiki_search`, then `wiki_read` / `wiki_write` and the other page tools."""
    router = platform.runtime(LLM)
    return [tool.definition(router), *wiki_tools.definitions(router)]


async def stop(platform: Platform) -> None:
    vectors.use(vector_index.IN_PROCESS)  # the next start (a test's next server) chooses again
    for key in (WIKI_SWEEP, WIKI_TRANSFORM_SWEEP):
        if sweep := platform.find_runtime(key):
            sweep.stop()
    await platform.runtime(WIKI).stop()
