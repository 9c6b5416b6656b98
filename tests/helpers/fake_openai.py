"""A scripted OpenAI-compatible HTTP server for tests and benchmarks."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import time
import uuid
from typing import Any

from tests.helpers.llm_script import (
    BaseHandler,
    RecordedRequest,
    Script,
    ScriptedServerBase,
    ScriptedToolCall,
    StreamClosed,
    fake_embedding,
    split_chunks,
    split_fragments,
    word_count,
)

__all__ = ["Script", "ScriptedOpenAI", "ScriptedToolCall"]


def last_user_text(messages: Any) -> str:
    """Text of the last user message of an OpenAI request."""
    for msg in reversed(messages if isinstance(messages, list) else []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
            return str(content or "")
    return ""


def error_body(script: Script) -> dict[str, Any]:
    """An OpenAI-style error payload."""
    return {"error": {"message": script.error_message, "type": script.error_type or "server_error", "param": None, "code": None}}


class _Handler(BaseHandler):
    def check_auth(self) -> bool:
        key = self.srv.api_key
        if key and self.request.headers.get("Authorization") != f"Bearer {key}":
            self.send_json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})
            return False
        return True


class ModelsHandler(_Handler):
    async def get(self) -> None:
        self.body_json()
        if self.check_auth():
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.srv.models]
            self.send_json(200, {"object": "list", "data": data})


class EmbeddingsHandler(_Handler):
    async def post(self) -> None:
        body = self.body_json()
        if not self.check_auth():
            return
        inputs = body.get("input") if isinstance(body, dict) else None
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list):
            self.send_json(400, {"error": {"message": "'input' is required", "type": "invalid_request_error"}})
            return
        model = body.get("model")
        hold = getattr(self.srv, "embedding_hold", None)  # a test holds inputs holding this word until it releases them
        if hold and any(hold in str(t) for t in inputs):
            await self.srv.embedding_release.wait()
        # Another embedding model than fake-embedding gives other vectors (its name salts the text), of its own size.
        dims = getattr(self.srv, "embedding_dims", {}).get(model, 8)
        salt = "" if model in (None, "fake-embedding") else f"{model}:"
        data = [{"object": "embedding", "index": i, "embedding": fake_embedding(salt + str(t), dims)} for i, t in enumerate(inputs)]
        usage = {"prompt_tokens": word_count(inputs), "total_tokens": word_count(inputs)}
        self.send_json(200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage})


class ChatHandler(_Handler):
    async def post(self) -> None:
        body = self.body_json()
        if not self.check_auth():
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self.send_json(400, {"error": {"message": "'messages' is required", "type": "invalid_request_error"}})
            return
        script = self.srv.next_script() or Script(text="Echo: " + last_user_text(body["messages"]))
        if script.hang:
            await self.srv.hang_forever()
            return
        if script.error_status:
            if script.retry_after is not None:
                self.set_header("Retry-After", script.retry_after)
            self.send_json(script.error_status, error_body(script))
            return
        try:
            if body.get("stream") and not script.ignore_stream:
                await self.stream(body, script)
            else:
                if script.answer_after_s:
                    await asyncio.sleep(script.answer_after_s)
                self.complete(body, script)
        except StreamClosed:
            pass

    def _plan(self, body: dict[str, Any], script: Script) -> tuple[str, list[str], list[str], list[ScriptedToolCall], dict[str, int], str]:
        model = script.model or str(body.get("model") or "fake-model")
        text = split_chunks(script.text)
        reasoning = split_chunks(script.reasoning)
        calls = [ScriptedToolCall(c.name, c.arguments, c.id or "call_" + uuid.uuid4().hex[:12], c.fragments) for c in script.tool_calls]
        prompt = script.prompt_tokens if script.prompt_tokens is not None else word_count(body["messages"])
        completion = script.completion_tokens if script.completion_tokens is not None else word_count("".join(text + reasoning)) + len(calls)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        finish = script.finish_reason or ("tool_calls" if calls else "stop")
        return model, text, reasoning, calls, usage, finish

    def complete(self, body: dict[str, Any], script: Script) -> None:
        model, text, reasoning, calls, usage, finish = self._plan(body, script)
        if script.malformed:
            self.set_header("Content-Type", "application/json")
            self.finish('{"id": "chatcmpl-broken", "choices": [')
            return
        message: dict[str, Any] = {"role": "assistant", "content": "".join(text) if text or not calls else None}
        if reasoning:
            message["reasoning_content"] = "".join(reasoning)
        if calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_text()}} for c in calls
            ]
        payload: dict[str, Any] = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if script.include_usage:
            payload["usage"] = usage
        self.send_json(200, payload)

    async def stream(self, body: dict[str, Any], script: Script) -> None:
        model, text, reasoning, calls, usage, finish = self._plan(body, script)
        delay = script.delay_s if script.delay_s is not None else self.srv.default_delay_s
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
            obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            return f"data: {json.dumps(obj)}\n\n"

        frames = [chunk({"role": "assistant", "content": ""})]
        frames += [chunk({"reasoning_content": r}) for r in reasoning]
        frames += [chunk({"content": t}) for t in text]
        for i, call in enumerate(calls):
            for j, frag in enumerate(split_fragments(call.arguments_text(), call.fragments)):
                fn: dict[str, Any] = {"arguments": frag}
                tc: dict[str, Any] = {"index": i, "function": fn}
                if j == 0:
                    tc.update(id=call.id, type="function")
                    fn["name"] = call.name
                frames.append(chunk({"tool_calls": [tc]}))
        if script.malformed:
            frames.insert(1, "data: {this is not json\n\n")
        if script.stream_error:
            frames = frames[:1] + [f"data: {json.dumps({'error': {'message': script.stream_error, 'type': 'server_error'}})}\n\n"]
        elif not script.no_done:
            frames.append(chunk({}, finish))
            if script.include_usage and (body.get("stream_options") or {}).get("include_usage"):
                obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [], "usage": usage}
                frames.append(f"data: {json.dumps(obj)}\n\n")
            frames.append("data: [DONE]\n\n")
        self.start_sse()
        self.set_status(200)
        await self.flush()
        for n, frame in enumerate(frames):
            if script.hang_after_chunks is not None and n >= script.hang_after_chunks:
                await self.srv.hang_forever()
                return
            await self.send_raw(frame, delay if n else 0.0)
        self.finish()


# A 1x1 transparent PNG: what /v1/images/generations returns (as b64_json).
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


class TranscriptionsHandler(_Handler):
    """`/v1/audio/transcriptions`: multipart `file` + `model`; answers `{text}`."""

    async def post(self) -> None:
        self.srv.request_log.append(RecordedRequest("POST", self.request.path, dict(self.request.headers), None))
        if not self.check_auth():
            return
        files = self.request.files.get("file")
        model = self.get_body_argument("model", "")
        if not files or not model:
            self.send_json(400, {"error": {"message": "file and model are required", "type": "invalid_request_error"}})
            return
        f = files[0]
        self.srv.requests.append({"model": model, "filename": f.filename, "size": len(f.body),
                                  "language": self.get_body_argument("language", None)})
        self.send_json(200, {"text": f"transcript of {f.filename} ({len(f.body)} bytes)"})


class SpeechHandler(_Handler):
    """`/v1/audio/speech`: `{model, input, voice, response_format}`; answers audio bytes."""

    async def post(self) -> None:
        body = self.body_json()
        if not self.check_auth():
            return
        if not isinstance(body, dict) or not body.get("input") or not body.get("voice"):
            self.send_json(400, {"error": {"message": "input and voice are required", "type": "invalid_request_error"}})
            return
        fmt = body.get("response_format") or "mp3"
        self.set_header("Content-Type", {"mp3": "audio/mpeg", "wav": "audio/wav", "opus": "audio/ogg"}.get(fmt, "audio/mpeg"))
        self.finish(b"ID3fake-audio:" + str(body["input"]).encode())


class ImagesHandler(_Handler):
    """`/v1/images/generations`: `{model, prompt, size, response_format: b64_json}`."""

    async def post(self) -> None:
        body = self.body_json()
        if not self.check_auth():
            return
        if not isinstance(body, dict) or not body.get("prompt"):
            self.send_json(400, {"error": {"message": "prompt is required", "type": "invalid_request_error"}})
            return
        self.send_json(200, {"created": int(time.time()), "data": [{"b64_json": base64.b64encode(TINY_PNG).decode()}]})


class ScriptedOpenAI(ScriptedServerBase):
    """OpenAI-compatible server: /v1/chat/completions, /v1/models, /v1/embeddings."""

    url_suffix = "/v1"
    embedding_dims: dict[str, int] = {}  # model name -> vector size (8 when not named)
    embedding_hold: str | None = None
    embedding_release: asyncio.Event

    def routes(self) -> list[Any]:
        """URL specs."""
        args = {"srv": self}
        return [
            (r"/v1/chat/completions", ChatHandler, args),
            (r"/v1/models", ModelsHandler, args),
            (r"/v1/embeddings", EmbeddingsHandler, args),
            (r"/v1/audio/transcriptions", TranscriptionsHandler, args),
            (r"/v1/audio/speech", SpeechHandler, args),
            (r"/v1/images/generations", ImagesHandler, args),
        ]


async def _serve(host: str, port: int, delay_ms: float) -> None:
    srv = ScriptedOpenAI(default_delay_s=delay_ms / 1000.0, host=host, port=port)
    await srv.start()
    print(f"fake OpenAI server listening on {srv.url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await srv.stop()


def main() -> None:
    """Run the echo server standalone."""
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible server (echo mode)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=0.0, help="delay between stream chunks")
    ns = parser.parse_args()
    try:
        asyncio.run(_serve(ns.host, ns.port, ns.delay_ms))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
