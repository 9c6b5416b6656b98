"""LLM providers and models: their settings, the provider pool and the router every model call goes through."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter


LLM: RuntimeKey[LlmRouter] = RuntimeKey("llm")
