"""The built-in provider catalog and the seeding of the embedded local model at start."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from platform_server.db import database
from platform_server.features.models import service
from platform_server.features.models.models import VENDOR_NAMES, ModelConfig, Provider

log = logging.getLogger(__name__)

LOCAL = "local"
LOCAL_EMBEDDING_MODEL = "tokenlearn-static-model"


@dataclass(frozen=True)
class SeedModel:
    name: str
    model_type: str = "chat"
    modalities: str = "text"
    max_input_tokens: int | None = None


@dataclass(frozen=True)
class SeedProvider:
    id: str
    name: str
    protocol: str
    base_url: str
    models: tuple[SeedModel, ...] = field(default_factory=tuple)


# Disabled until an admin configures them (except `local`, enabled when its model is installed).
BUILTIN: tuple[SeedProvider, ...] = (
    SeedProvider("local", "Local (embedded)", "local", ""),
    SeedProvider(
        "openai",
        "OpenAI",
        "openai",
        "https://api.openai.com/v1",
        (
            SeedModel("gpt-4o-mini", modalities="text,image", max_input_tokens=128000),
            SeedModel("gpt-4o", modalities="text,image", max_input_tokens=128000),
            SeedModel("text-embedding-3-small", model_type="embedding"),
        ),
    ),
    SeedProvider(
        "anthropic",
        "Anthropic",
        "anthropic",
        "https://api.anthropic.com",
        (
            SeedModel("claude-sonnet-4-5", modalities="text,image", max_input_tokens=200000),
            SeedModel("claude-haiku-4-5", modalities="text,image", max_input_tokens=200000),
        ),
    ),
    SeedProvider(
        "deepseek",
        "DeepSeek",
        "openai",
        "https://api.deepseek.com/v1",
        (
            SeedModel("deepseek-chat", max_input_tokens=64000),
            SeedModel("deepseek-reasoner", max_input_tokens=64000),
        ),
    ),
    SeedProvider("openrouter", "OpenRouter", "openai", "https://openrouter.ai/api/v1"),
    SeedProvider("ollama", "Ollama", "ollama", "http://127.0.0.1:11434"),
    SeedProvider("lmstudio", "LM Studio", "openai", "http://127.0.0.1:1234/v1"),
    SeedProvider("vllm", "vLLM", "openai", "http://127.0.0.1:8000/v1"),
    SeedProvider("llamacpp", "llama.cpp server", "openai", "http://127.0.0.1:8080/v1"),
    # The two OAuth vendors (ids are the API's neutral stand-ins): named by what they sign in to.
    SeedProvider("vendor_a", VENDOR_NAMES["vendor_a"], "anthropic", "https://api.anthropic.com"),
    SeedProvider("vendor_b", VENDOR_NAMES["vendor_b"], "openai", "https://api.openai.com/v1"),
)


def seed_catalog() -> None:
    """Insert missing built-in providers with their models (idempotent; never touches edited rows)."""
    with database.atomic():
        existing = {p.id for p in Provider.select(Provider.id)}
        for order, seed in enumerate(BUILTIN):
            if seed.id in existing:
                continue
            Provider.create(
                id=seed.id,
                name=seed.name,
                protocol=seed.protocol,
                base_url=seed.base_url,
                enabled=False,
                builtin=True,
                sort_order=order,
            )
            for m in seed.models:
                ModelConfig.create(
                    provider=seed.id,
                    model_name=m.name,
                    display_name=m.name,
                    model_type=m.model_type,
                    modalities=m.modalities,
                    max_input_tokens=m.max_input_tokens,
                )


def seed_local(chat_model_name: str | None, embedding_path: str | None) -> None:
    """Give the `local` provider its shipped chat and embedding models when they are installed.

    A fresh install thus chats with no configuration: the local model becomes the default chat model
    when no other default exists, and the local embedding model the default embedding model.
    """

    with database.atomic():
        local = Provider.get_or_none(Provider.id == LOCAL)
        if local is None:
            return
        models = list(ModelConfig.select().where(ModelConfig.provider == LOCAL))
        changed = False
        if chat_model_name and not any(m.model_type == "chat" for m in models):
            display = Path(chat_model_name).stem
            ModelConfig.create(provider=LOCAL, model_name=chat_model_name, display_name=display, model_type="chat", max_input_tokens=2048)
            changed = True
        if embedding_path and not any(m.model_type == "embedding" for m in models):
            ModelConfig.create(provider=LOCAL, model_name=LOCAL_EMBEDDING_MODEL, display_name="Static embeddings (model2vec)", model_type="embedding")
            changed = True
        if changed and not local.enabled:
            local.enabled = True
            local.save()
        service.ensure_defaults()
