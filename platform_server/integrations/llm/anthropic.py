"""Client for the Anthropic Messages API."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from platform_server.integrations.llm._http import HttpLlmClient, stream_json
from platform_server.integrations.llm.base import ToolCallAssembler
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

API_VERSION = "2023-06-01"
THINKING_BUDGET = {"low": 1024, "medium": 4096, "high": 16384, "max": 32000}
DEFAULT_MAX_TOKENS = 4096
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}


def _image_block(url: str) -> JsonObject:
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media or "image/png", "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _content_blocks(msg: ChatMessage) -> list[JsonObject]:
    if isinstance(msg.content, list):
        blocks: list[JsonObject] = []
        for p in msg.content:
            if p.get("type") == "text" and p.get("text"):
                blocks.append({"type": "text", "text": str(p["text"])})
            elif p.get("type") == "image" and p.get("url"):
                blocks.append(_image_block(str(p["url"])))
        return blocks
    return [{"type": "text", "text": msg.content}] if msg.content else []


def _tool_input(arguments: str) -> JsonObject:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"raw": arguments}
    return value if isinstance(value, dict) else {"value": value}


def convert_messages(messages: list[ChatMessage]) -> tuple[str, list[JsonObject]]:
    """Split ChatMessages into the system text and alternating Anthropic messages."""
    system: list[str] = []
    turns: list[tuple[str, list[JsonObject]]] = []  # (role, blocks): consecutive messages of a role join one turn
    for msg in messages:
        if msg.role == "system":
            if msg.text():
                system.append(msg.text())
            continue
        blocks: list[JsonObject]
        if msg.role == "tool":
            role = "user"
            blocks = [{"type": "tool_result", "tool_use_id": msg.tool_call_id or "", "content": msg.text()}]
        elif msg.role == "assistant":
            role = "assistant"
            blocks = _content_blocks(msg) + [
                {"type": "tool_use", "id": tc.id, "name": tc.name, "input": _tool_input(tc.arguments)} for tc in msg.tool_calls
            ]
        else:
            role = "user"
            blocks = _content_blocks(msg)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return "\n\n".join(system), [{"role": role, "content": blocks} for role, blocks in turns]


def build_body(req: ChatRequest, *, stream: bool) -> JsonObject:
    """Build the /v1/messages request body."""
    system, messages = convert_messages(req.messages)
    body: JsonObject = {"model": req.model, "messages": messages, "max_tokens": req.max_tokens or DEFAULT_MAX_TOKENS}
    if system:
        body["system"] = system
    if stream:
        body["stream"] = True
    if req.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters or {"type": "object", "properties": {}}} for t in req.tools
        ]
    budget = THINKING_BUDGET.get(req.thinking_level or "")
    # Without stored thinking signatures, a tool-use continuation cannot carry thinking blocks back.
    last = messages[-1] if messages else {}
    blocks = last.get("content")
    continuing_tools = (
        last.get("role") == "user" and isinstance(blocks, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
    )
    if budget and not continuing_tools:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        body["max_tokens"] = budget + (req.max_tokens or DEFAULT_MAX_TOKENS)
    elif req.temperature is not None:
        body["temperature"] = req.temperature
    return body


def _input_tokens(usage: JsonObject) -> int:
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(int(v) for v in (usage.get(k) for k in keys) if isinstance(v, (int, float)))


def result_from_message(data: object) -> ChatResult:
    """Convert a whole Messages API response into a ChatResult."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise LlmError(f"anthropic: response has no content: {str(data)[:200]}")
    text, thinking, calls = [], [], []
    for block in data["content"]:
        btype = block.get("type")
        if btype == "text":
            text.append(block.get("text") or "")
        elif btype == "thinking":
            thinking.append(block.get("thinking") or "")
        elif btype == "tool_use":
            calls.append(ToolCall(id=block.get("id") or "", name=block.get("name") or "", arguments=json.dumps(block.get("input") or {})))
    usage = data.get("usage") or {}
    stop = data.get("stop_reason") or "end_turn"
    return ChatResult(
        content="".join(text),
        reasoning="".join(thinking),
        tool_calls=calls,
        prompt_tokens=_input_tokens(usage),
        completion_tokens=int(usage.get("output_tokens") or 0),
        finish_reason=_STOP.get(stop, stop),
    )


class AnthropicClient(HttpLlmClient):
    """Speaks POST {base_url}/v1/messages and GET /v1/models."""

    protocol = "anthropic"

    def fixed_headers(self) -> dict[str, str]:
        return {"anthropic-version": API_VERSION}

    def key_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key}

    def api_root(self, base_url: str) -> str:
        """`/v1` joined once, whether the configured address ends with it or not."""
        base = (base_url or "https://api.anthropic.com").rstrip("/")
        return (base[:-3] if base.endswith("/v1") else base) + "/v1"

    async def stream_chat(self, req: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Stream a message as provider-neutral events."""
        tools = ToolCallAssembler()
        block_tool: dict[int, int] = {}  # content block index -> tool index
        prompt = completion = 0
        stop_reason: str | None = None
        stopped = False
        async with self.http.stream_sse("/messages", build_body(req, stream=True)) as events:
            async for event, data in events:
                try:
                    ev = stream_json(data)
                except ValueError:
                    raise LlmError(f"anthropic: malformed stream data: {data[:200]!r}") from None
                if not isinstance(ev, dict):
                    raise LlmError(f"anthropic: unexpected stream data: {data[:200]!r}")
                kind = ev.get("type") or event
                if kind == "error":
                    err = ev.get("error") or {}
                    raise LlmError(f"anthropic: error in stream: {err.get('type', 'error')}: {err.get('message', data[:200])}")
                if kind == "message":  # a plain JSON answer to a streamed request
                    whole = result_from_message(ev)
                    if whole.reasoning:
                        yield ReasoningDelta(whole.reasoning)
                    if whole.content:
                        yield TextDelta(whole.content)
                    for i, tc in enumerate(whole.tool_calls):
                        yield tools.add(i, tc.id, tc.name, tc.arguments)
                    prompt, completion = whole.prompt_tokens, whole.completion_tokens
                    stop_reason, stopped = ev.get("stop_reason") or "end_turn", True
                    break
                if kind == "message_start":
                    usage = (ev.get("message") or {}).get("usage") or {}
                    prompt = _input_tokens(usage)
                    completion = int(usage.get("output_tokens") or 0)
                elif kind == "content_block_start":
                    block = ev.get("content_block") or {}
                    if block.get("type") == "tool_use":
                        block_tool[int(ev.get("index", 0))] = len(block_tool)
                        yield tools.add(block_tool[int(ev.get("index", 0))], block.get("id"), block.get("name"), "")
                    elif block.get("type") == "text" and block.get("text"):
                        yield TextDelta(block["text"])
                    elif block.get("type") == "thinking" and block.get("thinking"):
                        yield ReasoningDelta(block["thinking"])
                elif kind == "content_block_delta":
                    delta = ev.get("delta") or {}
                    dtype = delta.get("type")
                    if dtype == "text_delta" and delta.get("text"):
                        yield TextDelta(delta["text"])
                    elif dtype == "thinking_delta" and delta.get("thinking"):
                        yield ReasoningDelta(delta["thinking"])
                    elif dtype == "input_json_delta":
                        idx = block_tool.get(int(ev.get("index", 0)))
                        if idx is None:
                            raise LlmError("anthropic: input_json_delta for an unknown content block")
                        yield tools.add(idx, None, None, delta.get("partial_json") or "")
                elif kind == "message_delta":
                    stop_reason = (ev.get("delta") or {}).get("stop_reason") or stop_reason
                    usage = ev.get("usage") or {}
                    if "output_tokens" in usage:
                        completion = int(usage.get("output_tokens") or 0)
                    if usage.get("input_tokens") is not None:
                        prompt = max(prompt, _input_tokens(usage))
                elif kind == "message_stop":
                    stopped = True
                    break
        if not stopped and stop_reason is None:
            raise LlmError("anthropic: stream ended before message_stop")
        yield Usage(prompt_tokens=prompt, completion_tokens=completion)
        yield Finish(reason=_STOP.get(stop_reason or "end_turn", stop_reason or "stop"), tool_calls=tools.calls())

    async def chat(self, req: ChatRequest) -> ChatResult:
        """Run a non-streamed message call."""
        data = await self.http.request_json("POST", "/messages", build_body(req, stream=False), headers_timeout=False)
        return result_from_message(data)

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Anthropic offers no embeddings API."""
        raise LlmError("anthropic: embeddings are not supported by the Anthropic API", retryable=False)

    async def list_models(self) -> list[ModelInfo]:
        """List models with GET /v1/models, following pagination."""
        out: list[ModelInfo] = []
        after = ""
        for _ in range(20):
            data = await self.http.request_json("GET", "/models?limit=1000" + (f"&after_id={after}" if after else ""))
            items = data.get("data") if isinstance(data, dict) else None
            if not isinstance(data, dict) or not isinstance(items, list):
                raise LlmError("anthropic: /v1/models answered without a model list")
            out.extend(ModelInfo(id=str(it["id"]), modalities="text,image") for it in items if isinstance(it, dict) and it.get("id"))
            if not data.get("has_more") or not data.get("last_id"):
                break
            after = str(data["last_id"])
        return out
