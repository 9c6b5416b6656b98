"""The LLM runtime: which model answers (targets), failover across providers, the provider pool."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, Awaitable
from dataclasses import dataclass
from typing import Any, Callable, TypeVar, Union

from platform_server.config import Config
from platform_server.features.models import service
from platform_server.features.models.errors import LlmFailure
from platform_server.features.models.models import ModelConfig, Provider
from platform_server.features.models.pool import (  # noqa: F401 - COOLDOWN_S, MAX_COOLDOWN_S: the pool's names, also read here
    COOLDOWN_S,
    MAX_COOLDOWN_S,
    ProviderPool,
    blames_model,
    counts_against_provider,
    iso,
)
from platform_server.features.models.retry import RetryPolicy
from platform_server.features.usage import meter
from platform_server.integrations import local_embeddings
from platform_server.integrations.llm.base import LlmClient, make_client
from platform_server.integrations.llm.types import (
    ChatMessage,
    ChatRequest,
    ChatResult,
    Finish,
    LlmError,
    ModelInfo,
    ProviderSettings,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from platform_server.memo import memo_on
from platform_server.web.errors import BadRequest

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class ModelTarget:
    provider_id: str
    protocol: str
    base_url: str
    api_key: str | None
    model_name: str
    modalities: str  # "text" or "text,image"
    max_input_tokens: int | None = None  # the model's context window when known (maxInputTokens)
    settings: ProviderSettings | None = None  # the provider's request settings (Ollama's keep_alive, num_ctx)


@dataclass(frozen=True)
class Routed:
    """First item the router yields: which target answers."""

    target: ModelTarget


RouterEvent = Union[Routed, TextDelta, ReasoningDelta, ToolCallDelta, Usage, Finish]


# ---- choosing targets ---------------------------------------------------------


def _target(provider: Provider, model_name: str, modalities: str | None = None, max_input_tokens: int | None = None) -> ModelTarget:
    if modalities is None:
        row = service.find_model(provider.id, model_name)
        modalities = row.modalities if row is not None else "text"
        max_input_tokens = row.max_input_tokens if row is not None else None
    settings = service.provider_settings(provider)
    return ModelTarget(provider.id, provider.protocol, provider.base_url, provider.api_key, model_name, modalities, max_input_tokens, settings)


def _row_target(m: ModelConfig) -> ModelTarget:
    return _target(m.provider, m.model_name, m.modalities, m.max_input_tokens)


def _enabled_provider(provider_id: str) -> Provider | None:
    return Provider.get_or_none((Provider.id == provider_id) & (Provider.enabled == True))  # noqa: E712


def provider_chat_target(provider_id: str) -> ModelTarget | None:
    """An enabled provider's default chat model, else its first enabled chat model."""
    if _enabled_provider(provider_id) is None:
        return None
    rows = [m for m in service.enabled_models("chat") if m.provider_id == provider_id]
    if not rows:
        return None
    return _row_target(next((m for m in rows if m.is_default), rows[0]))


def _explicit_target(model_name: str | None, provider_id: str | None) -> ModelTarget | None:
    if provider_id:
        provider = _enabled_provider(provider_id)
        if provider is None:
            return None
        return _target(provider, model_name) if model_name else provider_chat_target(provider_id)
    if not model_name:
        return None
    prefix, sep, rest = model_name.partition("/")
    if sep and rest:
        provider = _enabled_provider(prefix)
        if provider is not None:
            return _target(provider, rest)
    rows = [m for m in service.enabled_models("chat") if m.model_name == model_name]
    if not rows:
        return None
    return _row_target(next((m for m in rows if m.is_default), rows[0]))


def explicit_target(model_name: str | None, provider_id: str | None) -> ModelTarget | None:
    """Exactly this model (never a fallback), or None when it cannot be resolved to an enabled provider."""
    return _explicit_target(model_name, provider_id)


def resolve_targets(model_name: str | None, provider_id: str | None, preferences: list[str]) -> list[ModelTarget]:
    """The ordered models to try: the explicit one (or the global default), then each preferred provider's."""
    return list(_resolve_targets(model_name, provider_id, tuple(preferences)))


@memo_on(ModelConfig, Provider)
def _resolve_targets(model_name: str | None, provider_id: str | None, preferences: tuple[str, ...]) -> tuple[ModelTarget, ...]:
    first = _explicit_target(model_name, provider_id)
    if first is None:
        default = service.default_model("chat")
        first = _row_target(default) if default is not None else None
    candidates = [first] + [provider_chat_target(pid) for pid in preferences]
    targets: list[ModelTarget] = []
    seen: set[tuple[str, str]] = set()
    for t in candidates:
        if t is not None and (t.provider_id, t.model_name) not in seen:
            seen.add((t.provider_id, t.model_name))
            targets.append(t)
    if not targets:
        raise LlmFailure("No chat model configured")
    return tuple(targets)


def _as_llm_error(provider_id: str, exc: Exception) -> LlmError:
    if isinstance(exc, LlmError):
        return exc
    log.warning("provider %s call raised %s", provider_id, type(exc).__name__, exc_info=exc)
    return LlmError(f"{provider_id}: {type(exc).__name__}: {exc}")


# ---- the router ---------------------------------------------------------------


class LlmRouter:
    """One per process: cached clients per provider, failover over targets, pool bookkeeping."""

    def __init__(self, config: Config, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.pool = ProviderPool(clock, config.llm_provider_probe_interval_s)
        self.retry = RetryPolicy(config.llm_retry_attempts, config.llm_retry_max_backoff_s)
        self._clients: dict[str, tuple[tuple[str, str, str | None, ProviderSettings | None], LlmClient]] = {}
        self._retired: list[LlmClient] = []
        self.local_embedding: str | None = None  # the shipped embedding model, when it is the default one

    def preload_local_embedding(self) -> None:
        """Start the local embedding model's process and load the model in the background (returns at once; a
        later call finds it running), so the first material to embed neither waits for it nor freezes the server."""
        if self.local_embedding:
            local_embeddings.worker().preload(self.local_embedding)

    def client_for(self, target: ModelTarget) -> LlmClient:
        """The cached client of the target's provider, recreated when its config changed."""
        key = (target.protocol, target.base_url, target.api_key, target.settings)
        cached = self._clients.get(target.provider_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        if cached is not None:
            self._retired.append(cached[1])  # a call may still be using it: closed on stop
        # The embedded model's first token waits for its load and the whole prompt's evaluation on the server's own
        # cores: only the total budget applies there; the first-byte limit is for providers that hang.
        first_byte_s = self.config.llm_timeout_s if target.protocol == "local" else self.config.llm_first_byte_timeout_s
        client = make_client(
            target.protocol,
            target.base_url,
            target.api_key,
            timeout_s=self.config.llm_timeout_s,
            first_byte_timeout_s=first_byte_s,
            idle_timeout_s=self.config.llm_idle_timeout_s,
            settings=target.settings,
            default_num_ctx=self.config.ollama_num_ctx_default,
        )
        self._clients[target.provider_id] = (key, client)
        return client

    def _failed(self, target: ModelTarget, exc: LlmError) -> str:
        text = f"{target.provider_id}/{target.model_name}: {exc.message}"
        if counts_against_provider(exc):
            self.pool.failure(target.provider_id, exc.message, target.model_name if blames_model(exc) else None)
        return text

    def _cooling_note(self, target: ModelTarget) -> str | None:
        if self.pool.admit(target.provider_id, target.model_name):
            return None
        if until := self.pool.cooling_until(target.provider_id):
            return f"{target.provider_id}: cooling down until {iso(until)}"
        if until := self.pool.cooling_until(target.provider_id, target.model_name):
            return f"{target.provider_id}/{target.model_name}: cooling down until {iso(until)}"
        return f"{target.provider_id}/{target.model_name}: a trial request is in flight"

    @staticmethod
    def _all_failed(errors: list[str], first: LlmError | None) -> LlmError:
        # The user reads the first real failure's kind (or that every provider is resting); the details stay here.
        public = first.user_message if first is not None else "The model providers are unavailable right now; try again shortly."
        return LlmError("All model providers failed: " + "; ".join(errors), retryable=False, status=first.status if first else None, public=public)

    async def stream_chat(
        self, targets: list[ModelTarget], req: ChatRequest, usage: meter.UsageAccount | None = None
    ) -> AsyncGenerator[RouterEvent, None]:
        """Yield Routed(target) then that target's events; retry, then fail over, while nothing has flowed yet.
        The call is counted on `usage` (else under the current usage scope)."""
        count = usage.record if usage is not None else meter.record
        errors: list[str] = []
        first: LlmError | None = None
        for target in targets:
            note = self._cooling_note(target)
            if note:
                errors.append(note)
                continue
            retry = 0
            while True:
                stream = self.client_for(target).stream_chat(dataclasses.replace(req, model=target.model_name))
                started = False
                used = Usage(0, 0)
                try:
                    async for event in stream:
                        if not started:
                            started = True
                            yield Routed(target)
                        if isinstance(event, Usage):
                            used = Usage(used.prompt_tokens + event.prompt_tokens, used.completion_tokens + event.completion_tokens)
                        yield event
                except Exception as raw:  # noqa: BLE001 - every provider failure is retried, fails over or becomes LlmError
                    exc = _as_llm_error(target.provider_id, raw)
                    if started:  # content reached the caller: never sent again
                        raise LlmError(self._failed(target, exc), status=exc.status, retryable=False, timeout=exc.timeout) from raw
                    if await self.retry.pause(retry, exc, f"{target.provider_id}/{target.model_name}"):
                        retry += 1
                        continue
                    errors.append(self._failed(target, exc))
                    first = first or exc
                    break
                finally:
                    await stream.aclose()
                    if started:
                        count(target.provider_id, target.model_name, used.prompt_tokens, used.completion_tokens)
                self.pool.success(target.provider_id, target.model_name)
                return
        raise self._all_failed(errors or ["no model to try"], first)

    async def _retried(self, target: ModelTarget, call: Callable[[], Awaitable[T]]) -> T:
        """One call to the target, tried again on the failures worth it; the last failure is raised."""
        retry = 0
        while True:
            try:
                return await call()
            except Exception as raw:  # noqa: BLE001
                exc = _as_llm_error(target.provider_id, raw)
                if not await self.retry.pause(retry, exc, f"{target.provider_id}/{target.model_name}"):
                    if exc is raw:
                        raise
                    raise exc from raw
                retry += 1

    async def chat(self, targets: list[ModelTarget], req: ChatRequest, usage: meter.UsageAccount | None = None) -> tuple[ModelTarget, ChatResult]:
        """A whole (non-streamed) call with the same retry, failover and pool rules, counted as `stream_chat`'s."""
        count = usage.record if usage is not None else meter.record
        errors: list[str] = []
        first: LlmError | None = None
        for target in targets:
            note = self._cooling_note(target)
            if note:
                errors.append(note)
                continue
            client, one = self.client_for(target), dataclasses.replace(req, model=target.model_name)
            try:
                result = await self._retried(target, lambda: client.chat(one))
            except LlmError as exc:
                errors.append(self._failed(target, exc))
                first = first or exc
                continue
            self.pool.success(target.provider_id, target.model_name)
            count(target.provider_id, target.model_name, result.prompt_tokens, result.completion_tokens)
            return target, result
        raise self._all_failed(errors or ["no model to try"], first)

    async def embed(self, texts: list[str], model_id: int | None = None) -> list[list[float]]:
        """Embed texts with a given embedding model, or the default embedding model."""
        if model_id is None:
            row = service.default_model("embedding")
            if row is None:
                raise LlmFailure("No embedding model configured")
        else:
            row = service.get_model_row(model_id)
            if row.model_type != "embedding":
                raise BadRequest("modelId: not an embedding model")
        target = _row_target(row)
        client = self.client_for(target)
        vectors, tokens = await self._retried(target, lambda: client.embed_counted(target.model_name, texts))
        # The provider's own count (OpenAI's usage.prompt_tokens, the local tokenizer's), else an estimate.
        meter.record(target.provider_id, target.model_name, tokens if tokens is not None else meter.estimate_tokens(texts), 0, kind="embedding")
        return vectors

    async def list_models(self, provider_id: str) -> list[ModelInfo]:
        """The provider's own model list (raises LlmError)."""
        p = service.get_provider(provider_id)
        return await self.client_for(_target(p, "", "text")).list_models()

    async def probe(self, provider_id: str, model_name: str | None = None) -> dict[str, Any]:
        """A real one-token call (or the model list when the provider has no chat model); never raises LlmError."""
        p = service.get_provider(provider_id)
        if not model_name:
            rows = [m for m in service.models_of(provider_id) if m.model_type == "chat" and m.enabled]
            chosen = next((m for m in rows if m.is_default), rows[0] if rows else None)
            model_name = chosen.model_name if chosen else None
        target = _target(p, model_name or "", None if model_name else "text")
        started = time.monotonic()
        try:
            if model_name:
                req = ChatRequest(model=model_name, messages=[ChatMessage("user", "Reply with OK.")], max_tokens=1)
                result = await self.client_for(target).chat(req)
                detail: dict[str, Any] = {"modelName": model_name, "content": result.content}
            else:
                models = await self.client_for(target).list_models()
                detail = {"modelName": None, "modelCount": len(models)}
        except Exception as raw:  # noqa: BLE001 - reported to the admin, not raised
            exc = _as_llm_error(provider_id, raw)
            return {
                "success": False,
                "providerId": provider_id,
                "modelName": model_name,
                "message": exc.message,
                "latencyMs": int((time.monotonic() - started) * 1000),
                "status": exc.status,
            }
        return {"success": True, "providerId": provider_id, "message": "OK", "latencyMs": int((time.monotonic() - started) * 1000), **detail}

    async def reprobe(self, provider_id: str) -> dict[str, Any]:
        """Probe now and record the outcome in the pool (success clears any cooldown)."""
        result = await self.probe(provider_id)
        if result["success"]:
            self.pool.success(provider_id)
        else:
            self.pool.failure(provider_id, result["message"])
        return {**self._pool_entry(service.get_provider(provider_id)), "probe": result}

    def _pool_entry(self, provider: Provider) -> dict[str, Any]:
        return self.pool.state(provider, [m.model_name for m in service.models_of(provider.id) if m.model_type == "chat"])

    def pool_state(self) -> list[dict[str, Any]]:
        """Pool state of every provider (disabled ones included, marked so), each with its chat models' own."""
        return [self._pool_entry(p) for p in Provider.select().order_by(Provider.sort_order, Provider.id)]

    async def close(self) -> None:
        clients = [c for _, c in self._clients.values()] + self._retired
        self._clients.clear()
        self._retired.clear()
        results = await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
        for r in results:
            if isinstance(r, Exception):
                log.warning("closing an LLM client failed: %s", r)
