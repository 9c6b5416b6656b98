"""Server-sent events: frames `id: N / event: NAME / data: JSON`, heartbeats, error frames."""

from __future__ import annotations

import asyncio

import tornado.iostream
import tornado.web

from platform_server.web.base import dumps
from platform_server.web.errors import ApiError


def frame(event: str, data: object, event_id: int | None = None) -> str:
    """One SSE frame."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {dumps(data)}\n\n"


class SseWriter:
    """Writes frames to a handler; knows when the client has gone."""

    def __init__(self, handler: tornado.web.RequestHandler) -> None:
        self.handler = handler
        self.closed = False
        self.started = False
        self._flush_due = False

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        h = self.handler
        h.set_status(200)
        h.set_header("Content-Type", "text/event-stream; charset=UTF-8")
        h.set_header("Cache-Control", "no-cache")
        h.set_header("X-Accel-Buffering", "no")
        # Each frame goes out at once: with Nagle on, a small frame waits for the ACK of the
        # previous one (up to 40 ms of delayed ACK). Tornado turns Nagle back on after the response.
        stream = getattr(h.request.connection, "stream", None)
        if stream is not None:
            stream.set_nodelay(True)

    async def send(self, event: str, data: object, event_id: int | None = None) -> bool:
        """Write one frame and flush; False when the client has disconnected."""
        return await self.send_raw(frame(event, data, event_id))

    async def send_raw(self, text: str) -> bool:
        if self.closed:
            return False
        self.start()
        try:
            self.handler.write(text)
            await self.handler.flush()
            return True
        except tornado.iostream.StreamClosedError:
            self.closed = True
            return False

    def ready(self) -> bool:
        """True when a frame can be added now: the client has taken the earlier ones (it sets the pace)."""
        if self.closed or self.handler._finished:
            return False
        stream = getattr(self.handler.request.connection, "stream", None)
        return stream is not None and not stream.writing()

    def send_soon(self, text: str) -> bool:
        """Add a frame without waiting; False (nothing added) unless `ready()`: the caller then waits."""
        if not self.ready():
            return False
        self.send_now(text)
        return True

    def send_now(self, text: str, flush: bool = False) -> None:
        """Add frames without waiting; the frames added before the loop's next pass leave in one write
        (`flush`: they leave now, with what was added before)."""
        if self.closed or self.handler._finished:
            return
        self.start()
        self.handler.write(text)
        if flush:
            self.handler.flush()
        elif not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush_added)

    def _flush_added(self) -> None:
        self._flush_due = False
        if not self.handler._finished:
            self.handler.flush()  # a failed write means the client went: on_connection_close ends the reader

    async def error(self, message: str, code: int = 500) -> None:
        """Send the error frame and close."""
        await self.send("error", ApiError(message, code).stream_frame())
        self.finish()

    def finish(self) -> None:
        if not self.handler._finished:
            try:
                self.handler.finish()
            except tornado.iostream.StreamClosedError:
                pass
        self.closed = True
