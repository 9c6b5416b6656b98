"""Knowledge bases (the LLM wiki): sources, pages, pipelines, search and the engine that runs their work."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.wiki.engine import WikiEngine
    from platform_server.loops import Loop


WIKI: RuntimeKey[WikiEngine] = RuntimeKey("wiki")
WIKI_SWEEP: RuntimeKey[Loop] = RuntimeKey("wiki_sweep")  # several processes: the leader requeues a dead process's materials
WIKI_TRANSFORM_SWEEP: RuntimeKey[Loop] = RuntimeKey("wiki_transform_sweep")  # several processes: a dead process's transformations fail
