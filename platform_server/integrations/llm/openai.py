"""Client for OpenAI-compatible chat servers (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, ...)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from platform_server.integrations.llm._http import HttpLlmClient, stream_json
from platform_server.integrations.llm.base import ToolCallAssembler, new_tool_call_id
from platform_server.integrations.llm.types import (
    ChatMessage,
    ChatRequest,
    ChatResult,
    Finish,
    LlmError,
    ModelInfo,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from platform_server.json_types import JsonObject

_EFFORT = {"low": "low", "medium": "medium", "high": "high", "max": "high"}


def message_to_openai(msg: ChatMessage) -> JsonObject:
    """Convert a ChatMessage to the OpenAI chat message format."""
    out: JsonObject = {"role": msg.role}
    if msg.role == "user" and isinstance(msg.content, list) and any(p.get("type") == "image" for p in msg.content):
        parts: list[JsonObject] = []
        for p in msg.content:
            if p.get("type") == "text":
                parts.append({"type": "text", "text": str(p.get("text", ""))})
            elif p.get("type") == "image" and p.get("url"):
                parts.append({"type": "image_url", "image_url": {"url": p["url"]}})
        out["content"] = parts
    else:
        out["content"] = msg.text() if (msg.content is not None or msg.role != "assistant") else None
    if msg.role == "assistant" and msg.tool_calls:
        out["tool_calls"] = [
            {"id": tc.id, "type": "function", "function": {"name": tc.name, "arguments": tc.arguments or "{}"}} for tc in msg.tool_calls
        ]
        if not out["content"]:
            out["content"] = None
    if msg.role == "tool":
        out["tool_call_id"] = msg.tool_call_id or ""
    if msg.name and msg.role != "tool":
        out["name"] = msg.name
    return out


def build_body(req: ChatRequest, *, stream: bool) -> JsonObject:
    """Build the /chat/completions request body."""
    body: JsonObject = {"model": req.model, "messages": [message_to_openai(m) for m in req.messages]}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if req.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters or {"type": "object", "properties": {}}},
            }
            for t in req.tools
        ]
    if req.thinking_level in _EFFORT:
        body["reasoning_effort"] = _EFFORT[req.thinking_level]
    if req.max_tokens is not None:
        body["max_tokens"] = req.max_tokens
    if req.temperature is not None:
        body["temperature"] = req.temperature
    return body


def _finish_reason(reason: str | None, has_tools: bool) -> str:
    if has_tools and reason in (None, "stop", "tool_calls", "function_call"):
        return "tool_calls"
    return reason or "stop"


def _usage(data: object) -> Usage | None:
    if not isinstance(data, dict):
        return None
    return Usage(prompt_tokens=int(data.get("prompt_tokens") or 0), completion_tokens=int(data.get("completion_tokens") or 0))


class OpenAIClient(HttpLlmClient):
    """Speaks POST {base_url}/chat/completions, GET /models, POST /embeddings."""

    protocol = "openai"

    async def stream_chat(self, req: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Stream a chat completion as provider-neutral events."""
        tools = ToolCallAssembler()
        usage: Usage | None = None
        finish_reason: str | None = None
        done = False
        async with self.http.stream_sse("/chat/completions", build_body(req, stream=True)) as events:
            async for _event, data in events:
                if data.strip() == "[DONE]":
                    done = True
                    break
                try:
                    chunk = stream_json(data)
                except ValueError:
                    raise LlmError(f"openai: malformed stream data: {data[:200]!r}") from None
                if not isinstance(chunk, dict):
                    raise LlmError(f"openai: unexpected stream data: {data[:200]!r}")
                if chunk.get("error"):
                    err = chunk["error"]
                    msg = err.get("message") if isinstance(err, dict) else str(err)
                    raise LlmError(f"openai: error in stream: {msg}")
                usage = _usage(chunk.get("usage")) or usage
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or choice.get("message") or {}
                    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(reasoning, str) and reasoning:
                        yield ReasoningDelta(reasoning)
                    content = delta.get("content")
                    if isinstance(content, str) and content:
                        yield TextDelta(content)
                    for tc in delta.get("tool_calls") or []:
                        fn = tc.get("function") or {}
                        args = fn.get("arguments")
                        if isinstance(args, (dict, list)):
                            args = json.dumps(args)
                        yield tools.add(tc.get("index"), tc.get("id"), fn.get("name"), args or "")
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
        if not done and finish_reason is None:
            raise LlmError("openai: stream ended before the response was complete (no finish_reason or [DONE])")
        if usage is not None:
            yield usage
        yield Finish(reason=_finish_reason(finish_reason, bool(tools)), tool_calls=tools.calls())

    async def chat(self, req: ChatRequest) -> ChatResult:
        """Run a non-streamed chat completion."""
        data = await self.http.request_json("POST", "/chat/completions", build_body(req, stream=False), headers_timeout=False)
        if not isinstance(data, dict) or not data.get("choices"):
            raise LlmError(f"openai: response has no choices: {str(data)[:200]}")
        choice = data["choices"][0]
        msg = choice.get("message") or {}
        calls = []
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            if not isinstance(args, str):
                args = json.dumps(args if args is not None else {})
            calls.append(ToolCall(id=tc.get("id") or new_tool_call_id(), name=fn.get("name") or "", arguments=args or "{}"))
        usage = _usage(data.get("usage")) or Usage(0, 0)
        return ChatResult(
            content=msg.get("content") or "",
            reasoning=msg.get("reasoning_content") or msg.get("reasoning") or "",
            tool_calls=calls,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            finish_reason=_finish_reason(choice.get("finish_reason"), bool(calls)),
        )

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embed texts with POST /embeddings."""
        return (await self.embed_counted(model, texts))[0]

    async def embed_counted(self, model: str, texts: list[str]) -> tuple[list[list[float]], int | None]:
        """Embed texts with POST /embeddings; the tokens are the answer's usage.prompt_tokens when present."""
        if not texts:
            return [], 0
        data = await self.http.request_json("POST", "/embeddings", {"model": model, "input": texts})
        if not isinstance(data, dict):
            raise LlmError("openai: embeddings answered without an object")
        items = data.get("data")
        if not isinstance(items, list) or len(items) != len(texts):
            raise LlmError(f"openai: embeddings response has {len(items or [])} vectors for {len(texts)} inputs")
        items = sorted(items, key=lambda it: it.get("index", 0))
        usage = data.get("usage")
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        return [[float(x) for x in it["embedding"]] for it in items], tokens if isinstance(tokens, int) and tokens >= 0 else None

    async def list_models(self) -> list[ModelInfo]:
        """List models with GET /models."""
        data = await self.http.request_json("GET", "/models")
        items = data.get("data") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise LlmError("openai: /models answered without a model list")
        out = []
        for it in items:
            if not isinstance(it, dict) or not it.get("id"):
                continue
            mid = str(it["id"])
            arch = it["architecture"] if isinstance(it.get("architecture"), dict) else {}
            mods = [m for m in arch.get("input_modalities") or [] if m in ("text", "image")]
            ctx = it.get("context_length") or it.get("max_model_len") or it.get("context_window")
            out.append(
                ModelInfo(
                    id=mid,
                    model_type="embedding" if "embed" in mid.lower() else "chat",
                    modalities=",".join(mods) if mods else "text",
                    max_input_tokens=int(ctx) if isinstance(ctx, int) else None,
                )
            )
        return out
