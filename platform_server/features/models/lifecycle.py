"""Seed the provider catalog and the embedded local model; own the process's LLM router."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from platform_server.blocking import run_blocking
from platform_server.features.models import LLM, catalog, service
from platform_server.features.models.runtime import LlmRouter
from platform_server.integrations.llm.local import find_default_embedding_model, find_default_gguf

if TYPE_CHECKING:
    from platform_server.platform import Platform


def _local_files(configured: str) -> tuple[str | None, str | None]:
    chat = configured or find_default_gguf()
    return chat, find_default_embedding_model()


async def start(platform: Platform) -> None:
    configured = platform.config.local_model_path
    gguf, embedding = await run_blocking(_local_files, configured)
    catalog.seed_catalog()
    # A configured path is the model name itself (the local client opens it); the shipped one goes by its stem.
    chat_name = configured if configured else (Path(gguf).stem if gguf else None)
    catalog.seed_local(chat_name, embedding)
    router = LlmRouter(platform.config)
    platform.set_runtime(LLM, router)
    default = service.default_model("embedding")
    if embedding and default is not None and default.provider.protocol == "local":
        # Not loaded here: its process takes about a second of CPU, which a server without a knowledge base would
        # spend on every start for nothing (on two cores, against the start itself and the first requests). The
        # wiki asks for it once a knowledge base exists, before the first material needs it.
        router.local_embedding = embedding


async def stop(platform: Platform) -> None:
    await platform.runtime(LLM).close()
