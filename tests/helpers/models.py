"""Point the platform at a scripted OpenAI-compatible server through the real HTTP API."""
from __future__ import annotations

from tests.helpers.client import ApiClient


async def use_fake_openai(
    api: ApiClient,
    base_url: str,
    token: str = "alice",
    provider_id: str = "fake",
    model: str = "scripted",
    vision: bool = False,
) -> None:
    """Create custom provider `provider_id` at base_url, add chat model `model` and make it the global default."""
    r = await api.post(
        "/api/v1/models/custom-providers",
        {"providerId": provider_id, "name": provider_id, "baseUrl": base_url, "apiKey": "test-key", "protocol": "openai"},
        token=token,
    )
    assert r.status == 200, r.body
    r = await api.post(
        f"/api/v1/models/{provider_id}/models",
        {"modelName": model, "modelType": "chat", "modalities": "text,image" if vision else "text"},
        token=token,
    )
    assert r.status == 200, r.body
    r = await api.post(f"/api/v1/models/{r.data['id']}/default", token=token)
    assert r.status == 200, r.body
