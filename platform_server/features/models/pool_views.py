"""What the /api/v1/llm/provider-pool routes answer: the API document's view models (they only document; the routes
keep building plain dicts with `ProviderPool.state` and `LlmRouter.probe`, and the test suite checks every answer)."""

from __future__ import annotations

from pydantic import Field

from platform_server.serialize import View


class _CircuitView(View):
    """A circuit's state in the provider pool (a provider's, or one of its models')."""

    state: str = Field(description="healthy, degraded, cooldown, probing or disabled")
    consecutiveFailures: int
    cooldownUntil: str | None
    cooldownRemainingSeconds: int
    lastError: str | None
    lastSuccessTime: str | None
    lastFailureTime: str | None


class LlmModelPoolView(_CircuitView):
    """One model's circuit in the provider pool."""

    modelName: str


class LlmProviderPoolView(_CircuitView):
    """A provider's circuit in the pool, with each of its chat models' own under `models`."""

    providerId: str
    name: str
    protocol: str
    enabled: bool
    models: list[LlmModelPoolView]


class LlmPoolProbeView(View):
    """A one-token call to the provider's default chat model (or its model list when it has none)."""

    success: bool
    providerId: str
    message: str
    latencyMs: int
    modelName: str | None
    content: str | None = Field(None, description="the model's answer (a chat probe that succeeded)")
    modelCount: int | None = Field(None, description="models listed (a provider without a chat model)")
    status: int | None = Field(None, description="the provider's HTTP status (a failed probe)")


class LlmProviderReprobeView(LlmProviderPoolView):
    """The provider's pool state after a probe, with the probe's outcome."""

    probe: LlmPoolProbeView
