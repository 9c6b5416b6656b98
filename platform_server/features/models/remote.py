"""Model operations that call the provider: discover, bulk add, connection and embedding tests."""

from __future__ import annotations

import time
from typing import Any

from platform_server.db import database
from platform_server.features.audit import service as audit
from platform_server.features.models import capabilities, service
from platform_server.features.models.errors import LlmFailure
from platform_server.features.models.models import ModelConfig
from platform_server.features.models.runtime import LlmRouter
from platform_server.integrations.llm.types import LlmError, ModelInfo
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest


async def _remote_models(router: LlmRouter, provider_id: str) -> list[ModelInfo]:
    try:
        return await router.list_models(provider_id)
    except LlmError as exc:
        raise LlmFailure(f"Model discovery failed: {exc.message}") from None


async def discover(router: LlmRouter, provider_id: str) -> dict[str, Any]:
    """The provider's own model list, each marked whether it is already added, and the ones not yet added
    (the shape the original console reads: discoveredModels, newModels and their counts)."""
    service.get_provider(provider_id)
    infos = await _remote_models(router, provider_id)
    known = {(m.model_name, m.model_type) for m in service.models_of(provider_id)}
    found = [
        {
            "id": i.id,  # the console selects models by this name
            "name": i.id,
            "modelName": i.id,
            "modelType": i.model_type,
            "modalities": i.modalities,
            "maxInputTokens": i.max_input_tokens,
            "capabilities": list(i.capabilities) if i.capabilities is not None else None,  # as the provider says (Ollama)
            "added": (i.id, i.model_type) in known,
        }
        for i in infos
    ]
    fresh = [m for m in found if not m["added"]]
    return {"discoveredModels": found, "newModels": fresh, "totalDiscovered": len(found), "newCount": len(fresh)}


async def discover_apply(router: LlmRouter, caller: Caller, provider_id: str, names: list[str] | None) -> list[dict[str, Any]]:
    """Add the named discovered models (all not yet added when no names are given)."""
    service.get_provider(provider_id)
    infos = {i.id: i for i in await _remote_models(router, provider_id)}
    if names:
        unknown = [n for n in names if n not in infos]
        if unknown:
            raise BadRequest(f"modelNames: not offered by {provider_id}: {', '.join(unknown[:10])}")
        chosen = [infos[n] for n in dict.fromkeys(names)]
    else:
        chosen = list(infos.values())
    added: list[int] = []
    with database.atomic():
        known = {(m.model_name, m.model_type) for m in service.models_of(provider_id)}
        for info in chosen:
            if (info.id, info.model_type) in known:
                continue
            m = ModelConfig.create(
                provider=provider_id,
                model_name=info.id,
                display_name=info.id,
                model_type=info.model_type,
                modalities=service.check_modalities(info.modalities),
                max_input_tokens=info.max_input_tokens,
                capabilities=_capabilities_of(info),
            )
            added.append(m.id)
        service.ensure_defaults()
        audit.record(caller, "CREATE", "MODEL", None, f"{provider_id}: {len(added)} discovered models added")
    return [service.model_to_dict(service.get_model_row(i)) for i in added]


async def test_embedding(router: LlmRouter, model_id: int, text: str) -> dict[str, Any]:
    """Embed a short text with one embedding model and report the vector's size."""
    row = service.get_model_row(model_id)
    if row.model_type != "embedding":
        raise BadRequest("modelId: not an embedding model")
    started = time.monotonic()
    base = {"modelId": str(row.id), "providerId": row.provider_id, "modelName": row.model_name}
    try:
        vectors = await router.embed([text], model_id)
    except LlmError as exc:
        return {
            **base,
            "success": False,
            "message": exc.message,
            "dimensions": 0,
            "preview": [],
            "latencyMs": int((time.monotonic() - started) * 1000),
        }
    vector = vectors[0] if vectors else []
    return {
        **base,
        "success": bool(vector),
        "message": "OK" if vector else "empty embedding",
        "dimensions": len(vector),
        "preview": [round(x, 6) for x in vector[:8]],
        "latencyMs": int((time.monotonic() - started) * 1000),
    }


def _capabilities_of(info: Any) -> str:
    """What a discovered chat model can do when its server says so (Ollama's `tools`); "" keeps the protocol's defaults."""
    said = getattr(info, "capabilities", None)
    if said is None or info.model_type != "chat":
        return ""
    return capabilities.check(["chat", "json"] + (["tools"] if "tools" in said else [])) or ""
