"""A scripted server speaking Ollama's own REST API as documented (docs/api.md, docs/openapi.yaml).

/api/chat streams NDJSON (one JSON object a line, the last with `done: true` and the token counts), or
answers one object when `stream` is false; /api/tags lists the models, /api/show describes one (its
`model_info["<arch>.context_length"]` and `capabilities`), /api/embed embeds a string or a list of them.
Like Ollama it rejects what Ollama rejects, with its error shape `{"error": "..."}`: a missing model, a
message whose content is not a string, tool-call arguments that are not an object, an image that is not
base64, a bad `think` or `keep_alive`, a non-integer `num_ctx`, tools or thinking for a model without
that capability, chat with an embedding-only model.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

from tests.helpers.llm_script import (
    BaseHandler,
    Script,
    ScriptedServerBase,
    ScriptedToolCall,
    StreamClosed,
    fake_embedding,
    split_chunks,
    word_count,
)

__all__ = ["OllamaModel", "Script", "ScriptedOllama", "ScriptedToolCall"]

_GO_DURATION = re.compile(r"^(0|[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+)$")
_THINK_LEVELS = ("high", "medium", "low", "max")
_INT_OPTIONS = ("num_ctx", "num_predict", "num_keep", "seed", "top_k", "repeat_last_n", "num_batch", "num_gpu", "num_thread")


@dataclass(frozen=True)
class OllamaModel:
    """One installed model: what /api/tags and /api/show say of it."""

    name: str
    arch: str = "llama"
    context_length: int = 131072
    capabilities: tuple[str, ...] = ("completion", "tools")


class Rejected(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")


class _Handler(BaseHandler):
    srv: "ScriptedOllama"

    def reject(self, exc: Rejected) -> None:
        self.send_json(exc.status, {"error": exc.message})

    def request_body(self) -> dict[str, Any]:
        """The JSON body, refused as Ollama's gin binding refuses it."""
        body = self.body_json()
        if not self.request.body:
            raise Rejected(400, "missing request body")
        if not isinstance(body, dict) or "_raw" in body:
            raise Rejected(400, "invalid character in request body")
        return body

    def known_model(self, body: dict[str, Any], *, required_msg: str = "model is required") -> OllamaModel:
        name = body.get("model")
        if not isinstance(name, str) or not name:
            raise Rejected(400, required_msg)
        model = self.srv.find(name)
        if model is None:
            raise Rejected(404, f"model '{name}' not found")
        return model


def _check_keep_alive(value: Any) -> None:
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return
    if isinstance(value, str):
        if not _GO_DURATION.match(value):
            raise Rejected(400, f'time: invalid duration "{value}"' if not value.isdigit() else f'time: missing unit in duration "{value}"')
        return
    raise Rejected(400, f"Unsupported type: '{type(value).__name__}'")


def _check_options(options: Any) -> None:
    if options is None:
        return
    if not isinstance(options, dict):
        raise Rejected(400, "json: cannot unmarshal into Go struct field ChatRequest.options of type map[string]interface {}")
    for key in _INT_OPTIONS:
        value = options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise Rejected(400, f'option "{key}" must be of type integer')


def _check_messages(messages: Any) -> None:
    if messages is None:
        return
    if not isinstance(messages, list):
        raise Rejected(400, "json: cannot unmarshal into Go struct field ChatRequest.messages of type []api.Message")
    for msg in messages:
        if not isinstance(msg, dict):
            raise Rejected(400, "json: cannot unmarshal into Go value of type api.Message")
        if not isinstance(msg.get("role", ""), str):
            raise Rejected(400, "json: cannot unmarshal into Go struct field Message.messages.role of type string")
        if msg.get("content") is not None and not isinstance(msg.get("content"), str):
            kind = "array" if isinstance(msg["content"], list) else type(msg["content"]).__name__
            raise Rejected(400, f"json: cannot unmarshal {kind} into Go struct field Message.messages.content of type string")
        for image in msg.get("images") or []:
            try:
                base64.b64decode(image, validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise Rejected(400, "illegal base64 data at input byte 4") from None
        for call in msg.get("tool_calls") or []:
            args = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            if args is not None and not isinstance(args, dict):
                kind = "string" if isinstance(args, str) else type(args).__name__
                raise Rejected(400, f"json: cannot unmarshal {kind} into Go struct field ToolCallFunction.messages.tool_calls.function.arguments of type map[string]interface {{}}")


def _check_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Rejected(400, "json: cannot unmarshal into Go struct field ChatRequest.tools of type api.Tools")
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not isinstance(fn.get("parameters", {}), dict):
            raise Rejected(400, "json: cannot unmarshal into Go struct field Tool.tools.function of type api.ToolFunction")


class ChatHandler(_Handler):
    async def post(self) -> None:
        try:
            body = self.request_body()
            _check_messages(body.get("messages"))
            _check_tools(body.get("tools"))
            _check_options(body.get("options"))
            _check_keep_alive(body.get("keep_alive"))
            think = body.get("think")
            if think is not None and not isinstance(think, bool):
                if not isinstance(think, str):
                    raise Rejected(400, 'think must be a boolean or string ("high", "medium", "low", "max", true, or false)')
                if think not in _THINK_LEVELS:
                    raise Rejected(400, f'invalid think value: "{think}" (must be "high", "medium", "low", "max", true, or false)')
            model = self.known_model(body)
            caps = model.capabilities
            if "completion" not in caps:
                raise Rejected(400, f'"{model.name}" does not support chat')
            if body.get("tools") and "tools" not in caps:
                raise Rejected(400, f"registry.ollama.ai/library/{model.name} does not support tools")
            if think not in (None, False) and "thinking" not in caps:
                raise Rejected(400, f'"{model.name}" does not support thinking')
        except Rejected as exc:
            self.reject(exc)
            return
        script = self.srv.next_script() or Script(text="Echo: " + _last_user_text(body.get("messages") or []))
        if script.hang:
            await self.srv.hang_forever()
            return
        if script.error_status:
            self.send_json(script.error_status, {"error": script.error_message})
            return
        try:
            if body.get("stream", True):
                await self.stream(body, script)
            else:
                self.send_json(200, self.whole(body, script))
        except StreamClosed:
            pass

    def _lines(self, body: dict[str, Any], script: Script) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The stream's partial lines and its final line."""
        model = str(body["model"])
        created = _now()

        def line(**message: Any) -> dict[str, Any]:
            return {"model": model, "created_at": created, "message": {"role": "assistant", "content": "", **message}, "done": False}

        lines = [line(content="", thinking=t) for t in split_chunks(script.reasoning)]
        text = split_chunks(script.text)
        lines += [line(content=t) for t in text]
        for i, call in enumerate(script.tool_calls):  # each call whole, its arguments an object
            args = json.loads(call.arguments_text())
            lines.append(line(tool_calls=[{"id": call.id or f"call_{i}", "function": {"index": i, "name": call.name, "arguments": args}}]))
        prompt = script.prompt_tokens if script.prompt_tokens is not None else word_count(body.get("messages"))
        completion = script.completion_tokens if script.completion_tokens is not None else word_count("".join(text)) + len(script.tool_calls)
        final = {
            "model": model,
            "created_at": created,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": script.finish_reason or "stop",
            "total_duration": 1_000_000,
            "load_duration": 1_000,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": 1_000,
            "eval_count": completion,
            "eval_duration": 1_000,
        }
        return lines, final

    def whole(self, body: dict[str, Any], script: Script) -> dict[str, Any]:
        lines, final = self._lines(body, script)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(ln["message"]["content"] for ln in lines)}
        thinking = "".join(ln["message"].get("thinking", "") for ln in lines)
        if thinking:
            message["thinking"] = thinking
        calls = [c for ln in lines for c in ln["message"].get("tool_calls", [])]
        if calls:
            message["tool_calls"] = calls
        return {**final, "message": message}

    async def stream(self, body: dict[str, Any], script: Script) -> None:
        lines, final = self._lines(body, script)
        frames = [json.dumps(ln) + "\n" for ln in lines]
        if script.stream_error:  # Ollama's mid-stream failure: the status stays 200, an error object follows
            frames = frames[:1] + [json.dumps({"error": script.stream_error}) + "\n"]
        elif not script.no_done:
            frames.append(json.dumps(final) + "\n")
        delay = script.delay_s if script.delay_s is not None else self.srv.default_delay_s
        self.set_status(200)
        self.set_header("Content-Type", "application/x-ndjson")
        await self.flush()
        for n, frame in enumerate(frames):
            if script.hang_after_chunks is not None and n >= script.hang_after_chunks:
                await self.srv.hang_forever()
                return
            if self.srv.split_lines:  # a line cut across two TCP writes, inside a multi-byte character when there is one
                raw = frame.encode()
                cut = next((i for i in range(1, len(raw)) if raw[i] & 0xC0 == 0x80), len(raw) // 2)
                self.write(raw[:cut])
                await self.flush()
                self.write(raw[cut:])
                await self.flush()
                continue
            await self.send_raw(frame, delay if n else 0.0)
        self.finish()


def _last_user_text(messages: list[Any]) -> str:
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "user":
            return str(msg.get("content") or "")
    return ""


class TagsHandler(_Handler):
    async def get(self) -> None:
        self.body_json()
        models = [
            {
                "name": m.name,
                "model": m.name,
                "modified_at": _now(),
                "size": 1_000_000,
                "digest": "sha256:" + "0" * 64,
                "details": {"format": "gguf", "family": m.arch, "families": [m.arch], "parameter_size": "1B", "quantization_level": "Q4_K_M"},
            }
            for m in self.srv.ollama_models
        ]
        self.send_json(200, {"models": models})


class ShowHandler(_Handler):
    async def post(self) -> None:
        try:
            model = self.known_model(self.request_body())
        except Rejected as exc:
            self.reject(exc)
            return
        info = {
            "general.architecture": model.arch,
            "general.parameter_count": 1_000_000_000,
            f"{model.arch}.context_length": model.context_length,
            f"{model.arch}.embedding_length": 2048,
        }
        self.send_json(
            200,
            {
                "modelfile": f"FROM {model.name}",
                "parameters": "",
                "template": "{{ .Prompt }}",
                "details": {"format": "gguf", "family": model.arch, "parameter_size": "1B", "quantization_level": "Q4_K_M"},
                "model_info": info,
                "capabilities": list(model.capabilities),
                "modified_at": _now(),
            },
        )


class EmbedHandler(_Handler):
    async def post(self) -> None:
        try:
            body = self.request_body()
            _check_keep_alive(body.get("keep_alive"))
            _check_options(body.get("options"))
            model = self.known_model(body)
            given = body.get("input")
            if isinstance(given, str):
                texts = [given] if given else []
            elif isinstance(given, list) and all(isinstance(t, str) for t in given):
                texts = list(given)
            elif given is None:
                texts = []
            else:
                raise Rejected(400, "invalid input type")
            if "embedding" not in model.capabilities:
                raise Rejected(400, f'"{model.name}" does not support embeddings')
        except Rejected as exc:
            self.reject(exc)
            return
        script = self.srv.next_embed_error
        if script is not None:
            self.srv.next_embed_error = None
            self.send_json(script[0], {"error": script[1]})
            return
        self.send_json(200, {"model": model.name, "embeddings": [fake_embedding(t) for t in texts], "prompt_eval_count": word_count(texts)})


class RootHandler(_Handler):
    async def get(self) -> None:
        self.finish("Ollama is running")


class ScriptedOllama(ScriptedServerBase):
    """Ollama's native API on a free port: /api/chat, /api/tags, /api/show, /api/embed."""

    url_suffix = ""

    def __init__(self, models: list[OllamaModel] | None = None, **kwargs: Any) -> None:
        self.ollama_models = list(models or [OllamaModel("llama3.2:latest"), OllamaModel("nomic-embed-text:latest", "nomic-bert", 2048, ("embedding",))])
        super().__init__(models=[m.name for m in self.ollama_models], **kwargs)
        self.next_embed_error: tuple[int, str] | None = None
        self.split_lines = False  # send each NDJSON line in two writes

    def find(self, name: str) -> OllamaModel | None:
        """A model by its name; a name without a tag means `:latest`, as in Ollama."""
        full = name if ":" in name else name + ":latest"
        return next((m for m in self.ollama_models if m.name == full), None)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of the /api/chat requests received."""
        return [r.body for r in self.request_log if r.path == "/api/chat"]

    def routes(self) -> list[Any]:
        """URL specs."""
        args = {"srv": self}
        return [
            (r"/", RootHandler, args),
            (r"/api/chat", ChatHandler, args),
            (r"/api/tags", TagsHandler, args),
            (r"/api/show", ShowHandler, args),
            (r"/api/embed", EmbedHandler, args),
        ]
