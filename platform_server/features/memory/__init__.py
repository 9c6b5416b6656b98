"""Agent memory: the facts extracted from conversations, dreaming (their nightly consolidation) and the
memory routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.memory.dreaming import Dreamer
    from platform_server.loops import Loop


DREAMER: RuntimeKey[Dreamer] = RuntimeKey("memory")
MEMORY_NIGHTLY: RuntimeKey[Loop] = RuntimeKey("memory_nightly")
MEMORY_EXTRACTION: RuntimeKey[Loop] = RuntimeKey("memory_extraction")
MEMORY_DREAM_SWEEP: RuntimeKey[Loop] = RuntimeKey("memory_dream_sweep")  # several processes: a dead process's dreams fail
