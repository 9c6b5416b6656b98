"""Abstract LLM client, tool-call assembly helper and the protocol factory."""

from __future__ import annotations

import abc
import uuid
from collections.abc import AsyncGenerator, AsyncIterator

from platform_server.integrations.llm.types import (
    ChatRequest,
    ChatResult,
    Finish,
    LlmError,
    ModelInfo,
    ProviderSettings,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    Timeouts,
    ToolCall,
    ToolCallDelta,
    Usage,
)

PROTOCOLS = ("openai", "anthropic", "ollama", "local")


class LlmClient(abc.ABC):
    """A connection to one provider; streams end with exactly one Finish event."""

    protocol: str = ""

    @abc.abstractmethod
    def stream_chat(self, req: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Stream deltas, then Usage (when known), then one Finish."""

    async def chat(self, req: ChatRequest) -> ChatResult:
        """Run a whole chat call by consuming stream_chat."""
        return await collect_stream(self.stream_chat(req))

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embed texts; providers without embeddings raise LlmError."""
        raise LlmError(f"{self.protocol or 'this provider'}: embeddings are not supported", retryable=False)

    async def embed_counted(self, model: str, texts: list[str]) -> tuple[list[list[float]], int | None]:
        """Embed texts and tell the tokens the provider counted (None when it reports none)."""
        return await self.embed(model, texts), None

    @abc.abstractmethod
    async def list_models(self) -> list[ModelInfo]:
        """List the models the provider offers."""

    async def close(self) -> None:
        """Release network sessions and other resources."""


async def collect_stream(events: AsyncIterator[StreamEvent]) -> ChatResult:
    """Consume a stream into a ChatResult."""
    text: list[str] = []
    reasoning: list[str] = []
    prompt = completion = 0
    finish: Finish | None = None
    async for ev in events:
        if isinstance(ev, TextDelta):
            text.append(ev.text)
        elif isinstance(ev, ReasoningDelta):
            reasoning.append(ev.text)
        elif isinstance(ev, Usage):
            prompt, completion = ev.prompt_tokens, ev.completion_tokens
        elif isinstance(ev, Finish):
            finish = ev
    if finish is None:
        raise LlmError("stream ended without a finish event")
    return ChatResult(
        content="".join(text),
        reasoning="".join(reasoning),
        tool_calls=finish.tool_calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        finish_reason=finish.reason,
    )


def new_tool_call_id() -> str:
    """A fresh id for tool calls whose provider sent none."""
    return "call_" + uuid.uuid4().hex[:24]


class ToolCallAssembler:
    """Accumulates incremental tool-call fragments by index into whole calls."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}

    def add(self, index: int | None, call_id: str | None, name: str | None, args: str) -> ToolCallDelta:
        """Record a fragment and return it as a ToolCallDelta with a resolved index."""
        if index is None:
            index = self._slot_for(call_id)
        elif call_id and index in self._calls and self._calls[index]["id"] not in ("", call_id):
            index = self._slot_for(call_id)  # a server reusing an index for a new call
        slot = self._calls.setdefault(index, {"id": "", "name": "", "args": ""})
        if call_id:
            slot["id"] = call_id
        if name:
            slot["name"] = name if not slot["name"] or slot["name"] == name else slot["name"] + name
        slot["args"] += args
        return ToolCallDelta(index=index, id=call_id or None, name=name or None, arguments_delta=args)

    def _slot_for(self, call_id: str | None) -> int:
        for idx, slot in self._calls.items():
            if call_id and slot["id"] == call_id:
                return idx
        if call_id is None and self._calls:
            return max(self._calls)
        return max(self._calls, default=-1) + 1

    def __bool__(self) -> bool:
        return bool(self._calls)

    def calls(self) -> list[ToolCall]:
        """Return the assembled calls in index order."""
        out = []
        for idx in sorted(self._calls):
            slot = self._calls[idx]
            if not slot["name"]:
                continue
            out.append(ToolCall(id=slot["id"] or new_tool_call_id(), name=slot["name"], arguments=slot["args"] or "{}"))
        return out


def make_client(
    protocol: str,
    base_url: str,
    api_key: str | None,
    *,
    timeout_s: float = 120,
    first_byte_timeout_s: float = 60,
    idle_timeout_s: float = 60,
    extra_headers: dict[str, str] | None = None,
    settings: ProviderSettings | None = None,
    default_num_ctx: int = 8192,
) -> LlmClient:
    """Build the client for protocol 'openai', 'anthropic', 'ollama' or 'local' (settings: Ollama's only)."""
    limits = Timeouts(timeout_s, first_byte_timeout_s, idle_timeout_s)
    if protocol == "openai":
        from platform_server.integrations.llm.openai import OpenAIClient

        return OpenAIClient(base_url, api_key, limits=limits, extra_headers=extra_headers)
    if protocol == "anthropic":
        from platform_server.integrations.llm.anthropic import AnthropicClient

        return AnthropicClient(base_url, api_key, limits=limits, extra_headers=extra_headers)
    if protocol == "ollama":
        from platform_server.integrations.llm.ollama import OllamaClient

        return OllamaClient(base_url, api_key, limits=limits, extra_headers=extra_headers, settings=settings, default_num_ctx=default_num_ctx)
    if protocol == "local":
        from platform_server.integrations.llm.local import LocalClient

        return LocalClient(base_url, limits=limits)
    raise LlmError(f"unknown provider protocol {protocol!r} (expected one of {', '.join(PROTOCOLS)})", retryable=False)
