"""Shared Script type and tornado server plumbing for the scripted LLM test servers."""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import math
import socket
from dataclasses import dataclass, field
from typing import Any

import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web


@dataclass
class ScriptedToolCall:
    """A tool call the fake model makes; arguments are sent in `fragments` pieces."""

    name: str
    arguments: str | dict[str, Any] = "{}"
    id: str | None = None
    fragments: int = 3

    def arguments_text(self) -> str:
        """Arguments as JSON text."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Script:
    """One scripted answer; with no fields set the server echoes the last user message."""

    text: str | list[str] | None = None  # a str is split into a few chunks; a list is sent as is
    reasoning: str | list[str] | None = None
    tool_calls: list[ScriptedToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None  # default: a word count of the request
    completion_tokens: int | None = None  # default: a word count of the answer
    finish_reason: str | None = None  # default: tool calls -> tool_calls/tool_use, else stop/end_turn
    delay_s: float | None = None  # sleep before each chunk (default: the server's default_delay_s)
    answer_after_s: float = 0.0  # a whole (non-streamed) answer is sent after this long: a slow model
    error_status: int | None = None  # answer this HTTP status with a provider-style error body
    error_message: str = "scripted failure"
    error_type: str | None = None
    retry_after: str | None = None  # with error_status: a Retry-After header (seconds or an HTTP date)
    hang: bool = False  # never answer (no headers)
    hang_after_chunks: int | None = None  # send headers and N chunks, then stall forever
    malformed: bool = False  # a garbage data line after the first chunk
    no_done: bool = False  # close the stream after the content, without finish / [DONE] / message_stop
    stream_error: str | None = None  # an in-stream error event after the first chunk
    include_usage: bool = True
    ignore_stream: bool = False  # answer a streamed request with a plain JSON body, like some servers do
    model: str | None = None  # model name in the answer (default: the requested one)


def split_chunks(value: str | list[str] | None, pieces: int = 3) -> list[str]:
    """Split text into about `pieces` chunks at word boundaries (lists pass through)."""
    if value is None:
        return []
    if isinstance(value, list):
        return list(value)
    if not value:
        return []
    words = value.split(" ")
    size = max(1, math.ceil(len(words) / pieces))
    groups = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [g + (" " if i < len(groups) - 1 else "") for i, g in enumerate(groups)]


def split_fragments(text: str, pieces: int) -> list[str]:
    """Split text into `pieces` contiguous fragments (some may be short)."""
    pieces = max(1, min(pieces, len(text) or 1))
    size = math.ceil(len(text) / pieces) if text else 1
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def word_count(value: Any) -> int:
    """A rough token count: words in all strings of a JSON value."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(word_count(v) for v in value)
    if isinstance(value, dict):
        return sum(word_count(v) for v in value.values())
    return 0


def fake_embedding(text: str, dim: int = 8) -> list[float]:
    """A deterministic unit vector derived from the text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [b - 127.5 for b in digest[:dim]]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


@dataclass
class RecordedRequest:
    """One request the fake server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client_port: int = 0  # the client's side of the TCP connection: one port per connection


class ScriptedServerBase:
    """A tornado HTTP server on 127.0.0.1 with a free port and a queue of Scripts."""

    url_suffix = "/v1"

    def __init__(self, *, default_delay_s: float = 0.0, models: list[str] | None = None, api_key: str | None = None, port: int = 0, host: str = "127.0.0.1") -> None:
        self.default_delay_s = default_delay_s
        self.models = list(models or ["fake-model", "fake-embedding"])
        self.api_key = api_key
        self.host = host
        self.port = port
        self.scripts: collections.deque[Script] = collections.deque()
        self.requests: list[Any] = []  # JSON bodies of every POST
        self.request_log: list[RecordedRequest] = []  # every request, with method, path and headers
        self._server: tornado.httpserver.HTTPServer | None = None
        self._closing: asyncio.Event | None = None

    @property
    def url(self) -> str:
        """Base URL clients should use."""
        return f"http://{self.host}:{self.port}{self.url_suffix}"

    def enqueue(self, *scripts: Script) -> None:
        """Queue scripts; each chat request consumes one (echo when the queue is empty)."""
        self.scripts.extend(scripts)

    def next_script(self) -> Script | None:
        """Pop the next script, if any."""
        return self.scripts.popleft() if self.scripts else None

    def routes(self) -> list[Any]:
        """Tornado URL specs; subclasses implement."""
        raise NotImplementedError

    async def start(self) -> "ScriptedServerBase":
        """Bind and start serving inside the running asyncio loop."""
        self._closing = asyncio.Event()
        sockets = tornado.netutil.bind_sockets(self.port, self.host, family=socket.AF_INET)
        self.port = sockets[0].getsockname()[1]
        app = tornado.web.Application(self.routes())
        self._server = tornado.httpserver.HTTPServer(app)
        self._server.add_sockets(sockets)
        return self

    async def stop(self) -> None:
        """Stop listening, release hanging handlers and close connections."""
        if self._closing is not None:
            self._closing.set()
        if self._server is not None:
            self._server.stop()
            try:
                await asyncio.wait_for(self._server.close_all_connections(), 2)
            except asyncio.TimeoutError:
                pass
            self._server = None

    async def __aenter__(self) -> "ScriptedServerBase":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def hang_forever(self) -> None:
        """Wait until the server stops."""
        assert self._closing is not None
        await self._closing.wait()


class BaseHandler(tornado.web.RequestHandler):
    """Records requests, checks the API key and offers SSE helpers."""

    srv: ScriptedServerBase

    def initialize(self, srv: ScriptedServerBase) -> None:
        self.srv = srv

    def check_xsrf_cookie(self) -> None:
        pass

    def body_json(self) -> Any:
        """Decode and record the JSON body."""
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            body = {"_raw": self.request.body.decode("utf-8", "replace")}
        connection: Any = self.request.connection
        peer = connection.stream.socket.getpeername()
        self.srv.request_log.append(RecordedRequest(self.request.method or "", self.request.path, dict(self.request.headers), body, peer[1]))
        if self.request.method == "POST":
            self.srv.requests.append(body)
        return body

    def send_json(self, status: int, payload: Any) -> None:
        """Answer with a JSON body."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(payload))

    def start_sse(self) -> None:
        """Set the event-stream headers."""
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")

    async def send_raw(self, text: str, delay_s: float = 0.0) -> None:
        """Sleep, write and flush raw stream text (raises StreamClosedError if the client left)."""
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        self.write(text)
        await self.flush()


StreamClosed = tornado.iostream.StreamClosedError
