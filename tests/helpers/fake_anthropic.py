"""A scripted Anthropic Messages API server for tests."""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from typing import Any

from tests.helpers.llm_script import (
    BaseHandler,
    Script,
    ScriptedServerBase,
    ScriptedToolCall,
    StreamClosed,
    split_chunks,
    split_fragments,
    word_count,
)

__all__ = ["Script", "ScriptedAnthropic", "ScriptedToolCall"]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}


def last_user_text(messages: Any) -> str:
    """Text of the last user message of an Anthropic request (text and tool_result blocks)."""
    for msg in reversed(messages if isinstance(messages, list) else []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, str):
                return content
            parts = []
            for block in content or []:
                if block.get("type") == "text":
                    parts.append(block.get("text", ""))
                elif block.get("type") == "tool_result":
                    inner = block.get("content")
                    parts.append(inner if isinstance(inner, str) else json.dumps(inner))
            return "".join(parts)
    return ""


def error_body(status: int, script: Script) -> dict[str, Any]:
    """An Anthropic-style error payload."""
    etype = script.error_type or _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": etype, "message": script.error_message}}


def sse(event: str, data: dict[str, Any]) -> str:
    """One named SSE frame."""
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


class _Handler(BaseHandler):
    def check_auth(self) -> bool:
        key = self.srv.api_key
        if key and self.request.headers.get("x-api-key") != key:
            self.send_json(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
            return False
        return True


class ModelsHandler(_Handler):
    async def get(self) -> None:
        self.body_json()
        if self.check_auth():
            data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in self.srv.models]
            last = data[-1]["id"] if data else None
            self.send_json(200, {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None, "last_id": last})


class MessagesHandler(_Handler):
    async def post(self) -> None:
        body = self.body_json()
        if not self.check_auth():
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("max_tokens"):
            self.send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "messages and max_tokens are required"}})
            return
        script = self.srv.next_script() or Script(text="Echo: " + last_user_text(body["messages"]))
        if script.hang:
            await self.srv.hang_forever()
            return
        if script.error_status:
            self.send_json(script.error_status, error_body(script.error_status, script))
            return
        try:
            if body.get("stream") and not script.ignore_stream:
                await self.stream(body, script)
            else:
                self.complete(body, script)
        except StreamClosed:
            pass

    def _plan(self, body: dict[str, Any], script: Script) -> tuple[str, list[str], list[str], list[ScriptedToolCall], int, int, str]:
        model = script.model or str(body.get("model") or "fake-model")
        text = split_chunks(script.text)
        thinking = split_chunks(script.reasoning)
        calls = [ScriptedToolCall(c.name, c.arguments, c.id or "toolu_" + uuid.uuid4().hex[:20], c.fragments) for c in script.tool_calls]
        prompt = script.prompt_tokens if script.prompt_tokens is not None else word_count(body["messages"]) + word_count(body.get("system"))
        completion = script.completion_tokens if script.completion_tokens is not None else word_count("".join(text + thinking)) + len(calls)
        stop = script.finish_reason or ("tool_use" if calls else "end_turn")
        return model, text, thinking, calls, prompt, completion, stop

    def complete(self, body: dict[str, Any], script: Script) -> None:
        model, text, thinking, calls, prompt, completion, stop = self._plan(body, script)
        if script.malformed:
            self.set_header("Content-Type", "application/json")
            self.finish('{"type": "message", "content": [')
            return
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": "".join(thinking), "signature": "sig-fake"})
        if text:
            content.append({"type": "text", "text": "".join(text)})
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments_text() or "{}")} for c in calls]
        self.send_json(200, {
            "id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": completion},
        })

    async def stream(self, body: dict[str, Any], script: Script) -> None:
        model, text, thinking, calls, prompt, completion, stop = self._plan(body, script)
        delay = script.delay_s if script.delay_s is not None else self.srv.default_delay_s
        message: dict[str, Any] = {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": model, "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": 1}}
        frames = [sse("message_start", {"type": "message_start", "message": message}), sse("ping", {"type": "ping"})]
        index = 0

        def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
            nonlocal index
            frames.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
            frames.extend(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas)
            frames.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1

        if thinking:
            deltas = [{"type": "thinking_delta", "thinking": t} for t in thinking] + [{"type": "signature_delta", "signature": "sig-fake"}]
            block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
        if text:
            block({"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in text])
        for c in calls:
            frags = split_fragments(c.arguments_text(), c.fragments)
            block({"type": "tool_use", "id": c.id, "name": c.name, "input": {}}, [{"type": "input_json_delta", "partial_json": f} for f in frags])
        if script.malformed:
            frames.insert(2, "event: content_block_delta\ndata: {this is not json\n\n")
        if script.stream_error:
            err = {"type": "error", "error": {"type": script.error_type or "overloaded_error", "message": script.stream_error}}
            frames = frames[:2] + [sse("error", err)]
        elif not script.no_done:
            usage = {"output_tokens": completion} if script.include_usage else {}
            frames.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}))
            frames.append(sse("message_stop", {"type": "message_stop"}))
        self.start_sse()
        self.set_status(200)
        await self.flush()
        for n, frame in enumerate(frames):
            if script.hang_after_chunks is not None and n >= script.hang_after_chunks:
                await self.srv.hang_forever()
                return
            await self.send_raw(frame, delay if n else 0.0)
        self.finish()


class ScriptedAnthropic(ScriptedServerBase):
    """Anthropic-style server: /v1/messages (stream and not) and /v1/models; url is the host root."""

    url_suffix = ""

    def routes(self) -> list[Any]:
        """URL specs."""
        args = {"srv": self}
        return [(r"/v1/messages", MessagesHandler, args), (r"/v1/models", ModelsHandler, args)]


async def _serve(host: str, port: int, delay_ms: float) -> None:
    srv = ScriptedAnthropic(default_delay_s=delay_ms / 1000.0, host=host, port=port)
    await srv.start()
    print(f"fake Anthropic server listening on {srv.url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await srv.stop()


def main() -> None:
    """Run the echo server standalone."""
    parser = argparse.ArgumentParser(description="Scripted Anthropic Messages API server (echo mode)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=0.0, help="delay between stream events")
    ns = parser.parse_args()
    try:
        asyncio.run(_serve(ns.host, ns.port, ns.delay_ms))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
