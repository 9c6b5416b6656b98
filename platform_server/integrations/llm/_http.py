"""Shared aiohttp transport with connect/first-byte/idle/total timeouts and SSE parsing."""

from __future__ import annotations

import asyncio
import codecs
import email.utils
import json
import time
from collections.abc import AsyncGenerator, Awaitable
from contextlib import aclosing
from typing import TYPE_CHECKING, TypeVar

import orjson

from platform_server import lazy
from platform_server.integrations import eager_writes, outbound_proxy
from platform_server.integrations.llm.base import LlmClient
from platform_server.integrations.llm.types import LlmError, Timeouts
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")

T = TypeVar("T")
_MAX_ERROR_BODY = 64 * 1024
# Idle connections to a provider are kept this long (aiohttp's default is 15 s): a chat after a pause
# reuses one, and its request leaves in the step that makes it instead of after a new connection.
PROVIDER_KEEPALIVE_S = 60.0


def _json_text(value: object) -> str:
    """Request bodies (a turn's whole conversation and tools) encoded with orjson, several times faster."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # what orjson refuses (an int over 64 bits, a key that is not a string) the standard encoder takes
        return json.dumps(value)


class Deadline:
    """Tracks the total budget of one call and the first-byte/idle phase limits."""

    def __init__(self, provider: str, total_s: float, first_byte_s: float, idle_s: float) -> None:
        self.provider = provider
        self.total_s = total_s
        self.first_byte_s = first_byte_s
        self.idle_s = idle_s
        self.loop = asyncio.get_running_loop()
        self.end = self.loop.time() + total_s
        self.got_first_byte = False
        self._watch: _ReadWatch | None = None

    async def wait(self, aw: Awaitable[T], phase_s: float | None, what: str) -> T:
        """Await aw within min(phase_s, remaining total) or raise LlmError."""
        remaining = self.end - self.loop.time()
        limit = remaining if phase_s is None else min(phase_s, remaining)
        if limit <= 0:
            raise LlmError(self.timed_out(None, what), timeout=True)
        try:
            async with asyncio.timeout(limit):  # no task per awaited chunk, unlike wait_for
                return await aw
        except asyncio.TimeoutError:
            raise LlmError(self.timed_out(None if phase_s is None or remaining <= phase_s else phase_s, what), timeout=True) from None

    def timed_out(self, phase_s: float | None, what: str) -> str:
        """The error of a limit that ran out: the phase's (`phase_s`), or the total budget's (None)."""
        if phase_s is None:
            return f"{self.provider}: request timed out after {self.total_s:g}s (total)"
        return f"{self.provider}: timed out after {phase_s:g}s waiting for {what}"

    async def next_chunk(self, resp: aiohttp.ClientResponse) -> bytes:
        """Read the next body chunk, applying the first-byte or idle limit (and the total budget).

        A stream's chunks are read under one watchdog timer, not a timer each: it fails the pending
        read (with the same error) once the read has waited past its limit."""
        watch = self._watch
        if watch is None:  # one call, one response
            watch = self._watch = _ReadWatch(self, resp)
        watch.started = self.loop.time()
        try:
            chunk = await resp.content.readany()
        finally:
            watch.started = None
        self.got_first_byte = True
        return chunk

    def close(self) -> None:
        """Stop the stream's watchdog (the stream ended)."""
        if self._watch is not None:
            self._watch.stop()
            self._watch = None


class _ReadWatch:
    """The watchdog of one response's reads: checks when the pending read could be due, re-arms
    until then, and fails the read through the response's stream (its `readany()` raises)."""

    def __init__(self, dl: Deadline, resp: aiohttp.ClientResponse) -> None:
        self.dl = dl
        self.resp = resp
        self.started: float | None = None  # when the pending read began; None between reads
        self.handle = dl.loop.call_at(self._due(dl.loop.time()), self._check)

    def _limit(self) -> tuple[float, str]:
        dl = self.dl
        return (dl.idle_s, "the next stream chunk (idle)") if dl.got_first_byte else (dl.first_byte_s, "the first byte")

    def _due(self, since: float) -> float:
        return min(since + self._limit()[0], self.dl.end)

    def _check(self) -> None:
        dl, now = self.dl, self.dl.loop.time()
        if self.started is not None and now >= self._due(self.started):
            phase_s, what = self._limit()
            total_first = dl.end - self.started <= phase_s  # the budget's end came before the phase's
            self.resp.content.set_exception(LlmError(dl.timed_out(None if total_first else phase_s, what), timeout=True))
            return
        self.handle = dl.loop.call_at(self._due(self.started if self.started is not None else now), self._check)

    def stop(self) -> None:
        self.handle.cancel()


def error_message_from_body(body: bytes) -> str:
    """Extract the provider's human error message from an error response body."""
    text = body[:_MAX_ERROR_BODY].decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            for key in ("message", "detail", "error", "msg"):
                if isinstance(err.get(key), str) and err[key]:
                    return str(err[key])
        if isinstance(err, str) and err:
            return err
        for key in ("message", "detail"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return text[:500]


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header in seconds from now: delta-seconds or an HTTP date (RFC 9110 10.2.3); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


async def _read_capped(resp: aiohttp.ClientResponse, cap: int) -> bytes:
    """Read a response body up to cap bytes."""
    buf = bytearray()
    while len(buf) < cap:
        chunk = await resp.content.read(cap - len(buf))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


class HttpTransport:
    """One aiohttp session per client (recreated if the event loop changes)."""

    def __init__(
        self,
        provider: str,
        base_url: str,
        headers: dict[str, str],
        *,
        timeout_s: float,
        first_byte_timeout_s: float,
        idle_timeout_s: float,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self.timeout_s = timeout_s
        self.first_byte_timeout_s = first_byte_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            eager_writes.install(loop)  # the request body leaves with the request, not a loop pass later
            connect = min(self.first_byte_timeout_s, self.timeout_s)
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect, connect=connect)
            # No pool limit: aiohttp's default of 100 connections would queue the 101st concurrent
            # chat stream to a provider behind the first 100 (a turn holds its connection to the end).
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=PROVIDER_KEEPALIVE_S)
            self._session = aiohttp.ClientSession(headers=self.headers, timeout=timeout, connector=connector, json_serialize=_json_text)
            self._loop = loop
        return self._session

    def deadline(self) -> Deadline:
        """Start the timing budget of one call."""
        return Deadline(self.provider, self.timeout_s, self.first_byte_timeout_s, self.idle_timeout_s)

    async def open(self, method: str, path: str, body: object | None, dl: Deadline, *, headers_timeout: bool = True) -> aiohttp.ClientResponse:
        """Send a request and return a 2xx response (caller must release it) or raise LlmError."""
        url = self.base_url + path
        if self._session is None:  # the first call of this client: aiohttp may still be loading (off the loop)
            await lazy.loaded(aiohttp)
        session = self._get_session()
        try:
            resp = await dl.wait(
                session.request(method, url, json=body, proxy=outbound_proxy.for_url(url)),
                self.first_byte_timeout_s if headers_timeout else None,
                "the response headers",
            )
        except LlmError:
            raise
        except aiohttp.InvalidURL as exc:
            raise LlmError(f"{self.provider}: invalid URL {url}: {exc}", retryable=False) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise LlmError(f"{self.provider}: cannot connect to {url}: {exc or type(exc).__name__}", connection=True) from None
        if resp.status >= 300:
            try:
                body_bytes = await dl.wait(_read_capped(resp, _MAX_ERROR_BODY), self.idle_timeout_s, "the error body")
            except (LlmError, aiohttp.ClientError):
                body_bytes = b""
            finally:
                resp.close()
            msg = error_message_from_body(body_bytes)
            raise LlmError(
                f"{self.provider}: HTTP {resp.status} from {url}: {msg}",
                status=resp.status,
                retryable=resp.status in (408, 409, 425, 429) or resp.status >= 500,
                retry_after_s=retry_after_seconds(resp.headers.get("Retry-After")),
            )
        return resp

    async def request_json(self, method: str, path: str, body: object | None = None, *, headers_timeout: bool = True) -> object:
        """Send a request and return the decoded JSON body."""
        dl = self.deadline()
        resp = await self.open(method, path, body, dl, headers_timeout=headers_timeout)
        try:
            raw = await dl.wait(resp.read(), None, "the response body")
        except aiohttp.ClientError as exc:
            raise LlmError(f"{self.provider}: connection lost while reading the response: {exc}", connection=True) from None
        finally:
            resp.release()
        try:
            return json.loads(raw)
        except ValueError:
            raise LlmError(f"{self.provider}: malformed JSON response: {raw[:200]!r}") from None

    def stream_sse(self, path: str, body: object) -> aclosing[AsyncGenerator[tuple[str, str], None]]:
        """POST body and stream its (event, data) SSE messages: `async with http.stream_sse(...) as events`.

        Leaving the block (the body's end, a break at the protocol's own end, an error) closes the
        stream at once and returns the connection to the pool; a generator left open would be closed
        by the garbage collector a loop pass later, through a cross-thread wake-up."""
        return aclosing(self._sse_messages(path, body))

    def stream_ndjson(self, path: str, body: object) -> aclosing[AsyncGenerator[tuple[str, str], None]]:
        """POST body and stream its newline-delimited JSON lines (Ollama's native API) as ("message", line),
        with the same limits and connection handling as `stream_sse`."""
        return aclosing(self._sse_messages(path, body, NdjsonParser()))

    async def _sse_messages(self, path: str, body: object, parser: SseParser | None = None) -> AsyncGenerator[tuple[str, str], None]:
        dl = self.deadline()
        resp = await self.open("POST", path, body, dl)
        parser = parser or SseParser()
        try:
            if resp.content_type == "application/json":
                # Some servers ignore stream=true (or report errors) with a plain JSON body.
                raw = await dl.wait(resp.read(), self.first_byte_timeout_s, "the first byte")
                yield "json", raw.decode("utf-8", "replace")
                return
            while True:
                try:
                    chunk = await dl.next_chunk(resp)
                except aiohttp.ClientError as exc:
                    raise LlmError(f"{self.provider}: connection lost mid-stream: {exc}", connection=True) from None
                if not chunk:
                    for ev in parser.feed("", final=True):
                        yield ev
                    return
                for ev in parser.feed(parser.decode(chunk)):
                    yield ev
        finally:
            dl.close()
            if resp.content.at_eof():
                resp.release()
            else:
                resp.close()

    async def close(self) -> None:
        """Close the session."""
        if self._session is not None and not self._session.closed:
            try:
                await self._session.close()
            except RuntimeError:
                pass  # session belongs to a closed loop
        self._session = None


def stream_json(data: str) -> object:
    """One streamed event's JSON (orjson: each chunk of every answer is parsed; the standard decoder
    takes what orjson refuses, such as NaN). Raises ValueError when it is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


class SseParser:
    """Incremental text/event-stream parser tolerant of CRLF, comments and multi-line data."""

    def __init__(self) -> None:
        self._buf = ""
        self._event = ""
        self._data: list[str] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def decode(self, chunk: bytes) -> str:
        """Decode bytes, keeping split multi-byte characters for the next chunk."""
        return str(self._decoder.decode(chunk))

    def feed(self, text: str, *, final: bool = False) -> list[tuple[str, str]]:
        """Feed text; return completed (event, data) messages."""
        self._buf += text
        out: list[tuple[str, str]] = []
        while True:
            idx = _line_end(self._buf)
            if idx is None:
                break
            pos, width = idx
            line, self._buf = self._buf[:pos], self._buf[pos + width :]
            self._line(line, out)
        if final:
            if self._buf:
                self._line(self._buf.rstrip("\r"), out)
                self._buf = ""
            self._line("", out)
        return out

    def _line(self, line: str, out: list[tuple[str, str]]) -> None:
        if line == "":
            if self._data:
                out.append((self._event or "message", "\n".join(self._data)))
            self._event, self._data = "", []
            return
        if line.startswith(":"):
            return
        if line.lstrip().startswith(("{", "[")) and not self._data:
            out.append(("message", line))  # bare JSON line: some servers omit "data:"
            return
        name, sep, value = line.partition(":")
        if not sep:
            return
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value


class NdjsonParser(SseParser):
    """Newline-delimited JSON: every non-blank line is one message (no `data:` framing to strip)."""

    def _line(self, line: str, out: list[tuple[str, str]]) -> None:
        if line.strip():
            out.append(("message", line))


def _line_end(buf: str) -> tuple[int, int] | None:
    """Position and width of the first line terminator (\\n, \\r\\n or \\r) in buf."""
    n = buf.find("\n")
    r = buf.find("\r")
    if r == -1 and n == -1:
        return None
    if r == -1 or (n != -1 and n < r):
        return n, 1
    if r + 1 < len(buf):
        return (r, 2) if buf[r + 1] == "\n" else (r, 1)
    return None  # a trailing \r may be followed by \n in the next chunk


class HttpLlmClient(LlmClient):
    """A provider reached over HTTP: its transport built one way for every protocol (the accepted types,
    the key as the protocol sends it, extra headers, the time limits), closed with the client."""

    accept = "application/json, text/event-stream"

    def __init__(self, base_url: str, api_key: str | None, *, limits: Timeouts = Timeouts(), extra_headers: dict[str, str] | None = None) -> None:
        headers = {**self.fixed_headers(), "Accept": self.accept}
        if api_key:
            headers.update(self.key_headers(api_key))
        headers.update(extra_headers or {})
        self.http = HttpTransport(
            self.protocol,
            self.api_root(base_url),
            headers,
            timeout_s=limits.total_s,
            first_byte_timeout_s=limits.first_byte_s,
            idle_timeout_s=limits.idle_s,
        )

    def fixed_headers(self) -> dict[str, str]:
        """Headers every request of the protocol carries."""
        return {}

    def key_headers(self, api_key: str) -> dict[str, str]:
        """How the protocol sends the API key (a bearer token unless it says otherwise)."""
        return {"Authorization": f"Bearer {api_key}"}

    def api_root(self, base_url: str) -> str:
        """The configured address as the root the protocol's paths are joined to."""
        return base_url

    async def close(self) -> None:
        """Close the HTTP session."""
        await self.http.close()
