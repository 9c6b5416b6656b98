"""Client for Ollama's own REST API: /api/chat (NDJSON stream), /api/tags, /api/show, /api/embed.

Beside the OpenAI-compatible route Ollama also serves, the native API is the one that says what a model
is (its context length and capabilities, from /api/show) and takes the request settings that matter on a
small machine: `options.num_ctx` (Ollama silently cuts a prompt longer than it) and `keep_alive`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from platform_server.integrations.llm._http import HttpLlmClient, stream_json
from platform_server.integrations.llm.base import ToolCallAssembler, new_tool_call_id
from platform_server.integrations.llm.types import (
    ChatMessage,
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
    Usage,
)
from platform_server.json_types import JsonObject, int_of, str_of

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "http://127.0.0.1:11434"
# What Ollama's `think` takes for a level; "max" is newer than most servers, "high" is understood by all.
_THINK = {"off": False, "low": "low", "medium": "medium", "high": "high", "max": "high"}
_SHOW_CONCURRENCY = 4  # discovery asks /api/show of every model: a few at a time, not all at once
# Go's time.ParseDuration, which Ollama uses for a keep_alive string ("5m", "1h30m", "-1s"; "0" too).
KEEP_ALIVE = re.compile(r"^(0|[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+)$")


@dataclass(frozen=True)
class ModelShow:
    """What /api/show says of a model."""

    capabilities: frozenset[str] | None  # None: an older server that does not list them
    context_length: int | None


def context_cap(settings: ProviderSettings | None, default_num_ctx: int) -> int:
    """The num_ctx a provider's requests ask for: its own setting, else the platform's default."""
    return settings.num_ctx if settings is not None and settings.num_ctx else default_num_ctx


def check_keep_alive(value: str | int | None) -> str | int | None:
    """A keep_alive Ollama accepts (a Go duration or whole seconds; negative keeps the model loaded), else ValueError."""
    if value is None or isinstance(value, int):
        return value
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)  # bare digits are seconds; Ollama rejects them as a string ("missing unit")
    if not KEEP_ALIVE.match(text):
        raise ValueError("must be a duration such as 5m, 1h or -1 (keep loaded), or a number of seconds")
    return text


def base_root(base_url: str) -> str:
    """The server root: an OpenAI-compatible `/v1` (or `/api`) pasted into the URL is dropped."""
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    for suffix in ("/v1", "/api"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return base


def _arguments(text: str) -> JsonObject:
    """Ollama takes a tool call's arguments as a JSON object, never as text."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"raw": text}
    return value if isinstance(value, dict) else {"value": value}


def message_to_ollama(msg: ChatMessage) -> JsonObject:
    """A ChatMessage as an Ollama message: text content, images as bare base64, tool results by name."""
    out: JsonObject = {"role": msg.role, "content": msg.text()}
    if isinstance(msg.content, list):
        images = []
        for p in msg.content:
            url = str(p.get("url") or "") if p.get("type") == "image" else ""
            if url.startswith("data:") and ";base64," in url:
                images.append(url.split(";base64,", 1)[1])
        if images:
            out["images"] = images
    if msg.role == "assistant" and msg.tool_calls:
        out["tool_calls"] = [
            {"id": tc.id, "function": {"index": i, "name": tc.name, "arguments": _arguments(tc.arguments)}} for i, tc in enumerate(msg.tool_calls)
        ]
    if msg.role == "tool":
        out["tool_name"] = msg.name or ""
        if msg.tool_call_id:
            out["tool_call_id"] = msg.tool_call_id
    return out


def build_body(req: ChatRequest, show: ModelShow, settings: ProviderSettings, num_ctx: int, *, stream: bool) -> JsonObject:
    """The /api/chat body. Tools and `think` go only to a model that has them: Ollama answers 400 otherwise."""
    caps = show.capabilities
    body: JsonObject = {"model": req.model, "messages": [message_to_ollama(m) for m in req.messages], "stream": stream}
    if req.tools:
        if caps is None or "tools" in caps:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters or {"type": "object", "properties": {}}},
                }
                for t in req.tools
            ]
        else:
            log.info("ollama model %s cannot call tools: its %d tools are not offered", req.model, len(req.tools))
    if req.thinking_level in _THINK and caps is not None and "thinking" in caps:
        body["think"] = _THINK[req.thinking_level]
    options: JsonObject = {"num_ctx": min(num_ctx, show.context_length) if show.context_length else num_ctx}
    if req.max_tokens is not None:
        options["num_predict"] = req.max_tokens
    if req.temperature is not None:
        options["temperature"] = req.temperature
    body["options"] = options
    if settings.keep_alive is not None:
        body["keep_alive"] = settings.keep_alive
    return body


def _arguments_text(fn: JsonObject) -> str:
    """A call's arguments as JSON text: Ollama sends an object (a proxy in front of it may send text)."""
    args = fn.get("arguments")
    return args if isinstance(args, str) else json.dumps(args or {})


def _finish_reason(done_reason: str | None, has_tools: bool) -> str:
    if has_tools:
        return "tool_calls"
    return "length" if done_reason == "length" else "stop"


def _stream_error(chunk: JsonObject) -> LlmError:
    status = chunk.get("status")
    return LlmError(f"ollama: error in stream: {chunk['error']}", status=status if isinstance(status, int) else None)


class OllamaClient(HttpLlmClient):
    """Speaks POST /api/chat, GET /api/tags, POST /api/show and POST /api/embed."""

    protocol = "ollama"

    accept = "application/x-ndjson, application/json"

    def __init__(
        self,
        base_url: str,
        api_key: str | None,  # ollama.com and proxies in front of a server take a bearer key; a local server needs none
        *,
        limits: Timeouts = Timeouts(),
        extra_headers: dict[str, str] | None = None,
        settings: ProviderSettings | None = None,
        default_num_ctx: int = 8192,
    ) -> None:
        super().__init__(base_url, api_key, limits=limits, extra_headers=extra_headers)
        self.settings = settings or ProviderSettings()
        self.num_ctx = context_cap(self.settings, default_num_ctx)
        self._shown: dict[str, ModelShow] = {}

    def api_root(self, base_url: str) -> str:
        return base_root(base_url)

    async def show(self, model: str) -> ModelShow:
        """The model's capabilities and context length (asked once per model and client)."""
        known = self._shown.get(model)
        if known is not None:
            return known
        data = await self.http.request_json("POST", "/api/show", {"model": model})
        if not isinstance(data, dict):
            raise LlmError(f"ollama: /api/show answered without a model: {str(data)[:200]}")
        caps = data.get("capabilities")
        info: JsonObject = data["model_info"] if isinstance(data.get("model_info"), dict) else {}
        arch = info.get("general.architecture")
        ctx = info.get(f"{arch}.context_length") if arch else None
        if not isinstance(ctx, int):  # no architecture named: any "<arch>.context_length"
            ctx = next((v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)), None)
        shown = ModelShow(frozenset(str(c) for c in caps) if isinstance(caps, list) else None, ctx if isinstance(ctx, int) and ctx > 0 else None)
        self._shown[model] = shown
        return shown

    async def stream_chat(self, req: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Stream /api/chat's NDJSON lines as provider-neutral events."""
        body = build_body(req, await self.show(req.model), self.settings, self.num_ctx, stream=True)
        tools = ToolCallAssembler()
        calls = 0
        last: JsonObject | None = None
        async with self.http.stream_ndjson("/api/chat", body) as lines:
            async for _event, line in lines:
                try:
                    chunk = stream_json(line)
                except ValueError:
                    raise LlmError(f"ollama: malformed stream line: {line[:200]!r}") from None
                if not isinstance(chunk, dict):
                    raise LlmError(f"ollama: unexpected stream line: {line[:200]!r}")
                if chunk.get("error"):
                    raise _stream_error(chunk)
                msg = chunk["message"] if isinstance(chunk.get("message"), dict) else {}
                if isinstance(msg.get("thinking"), str) and msg["thinking"]:
                    yield ReasoningDelta(msg["thinking"])
                if isinstance(msg.get("content"), str) and msg["content"]:
                    yield TextDelta(msg["content"])
                for tc in msg.get("tool_calls") or []:
                    fn = tc.get("function") or {}
                    # Each call arrives whole (its arguments an object): one slot per call, in order.
                    yield tools.add(calls, tc.get("id") or new_tool_call_id(), fn.get("name"), _arguments_text(fn))
                    calls += 1
                if chunk.get("done"):
                    last = chunk
                    break
        if last is None:
            raise LlmError("ollama: stream ended before the response was complete (no done line)")
        yield Usage(prompt_tokens=int_of(last.get("prompt_eval_count")), completion_tokens=int_of(last.get("eval_count")))
        yield Finish(reason=_finish_reason(str_of(last.get("done_reason")), bool(tools)), tool_calls=tools.calls())

    async def chat(self, req: ChatRequest) -> ChatResult:
        """A non-streamed /api/chat call."""
        body = build_body(req, await self.show(req.model), self.settings, self.num_ctx, stream=False)
        data = await self.http.request_json("POST", "/api/chat", body, headers_timeout=False)
        if isinstance(data, dict) and data.get("error"):
            raise _stream_error(data)
        if not isinstance(data, dict) or not isinstance(data.get("message"), dict):
            raise LlmError(f"ollama: response has no message: {str(data)[:200]}")
        msg = data["message"]
        calls = [
            ToolCall(
                id=tc.get("id") or new_tool_call_id(),
                name=(tc.get("function") or {}).get("name") or "",
                arguments=_arguments_text(tc.get("function") or {}),
            )
            for tc in msg.get("tool_calls") or []
        ]
        return ChatResult(
            content=msg.get("content") or "",
            reasoning=msg.get("thinking") or "",
            tool_calls=calls,
            prompt_tokens=int(data.get("prompt_eval_count") or 0),
            completion_tokens=int(data.get("eval_count") or 0),
            finish_reason=_finish_reason(data.get("done_reason"), bool(calls)),
        )

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embed texts with POST /api/embed (one request for the batch)."""
        if not texts:
            return []
        body: JsonObject = {"model": model, "input": texts}
        if self.settings.keep_alive is not None:
            body["keep_alive"] = self.settings.keep_alive
        data = await self.http.request_json("POST", "/api/embed", body)
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            raise LlmError(f"ollama: /api/embed answered {len(vectors or [])} vectors for {len(texts)} inputs")
        return [[float(x) for x in v] for v in vectors]

    async def list_models(self) -> list[ModelInfo]:
        """The installed models (GET /api/tags), each with its context length and capabilities (/api/show)."""
        data = await self.http.request_json("GET", "/api/tags")
        items = data.get("models") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise LlmError("ollama: /api/tags answered without a model list")
        names = [str(it.get("model") or it.get("name")) for it in items if isinstance(it, dict) and (it.get("model") or it.get("name"))]
        gate = asyncio.Semaphore(_SHOW_CONCURRENCY)

        async def describe(name: str) -> ModelInfo:
            async with gate:
                try:
                    shown = await self.show(name)
                except LlmError as exc:  # one model that cannot be shown (a remote one) still lists
                    log.info("ollama: /api/show of %s failed: %s", name, exc.message)
                    shown = ModelShow(None, None)
            caps = shown.capabilities
            if caps is None:
                kind = "embedding" if "embed" in name.lower() else "chat"
            else:
                kind = "embedding" if "embedding" in caps and "completion" not in caps else "chat"
            return ModelInfo(
                id=name,
                model_type=kind,
                modalities="text,image" if caps is not None and "vision" in caps else "text",
                max_input_tokens=shown.context_length,
                capabilities=tuple(sorted(caps)) if caps is not None else None,
            )

        return list(await asyncio.gather(*(describe(n) for n in names)))
