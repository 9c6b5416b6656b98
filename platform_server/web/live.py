"""The handler side of a live feed: one SSE response streaming one subscription (team board, dream progress,
wiki processing), closed when the client goes."""

from __future__ import annotations

from typing import Awaitable, Callable

import tornado.web

from platform_server.web.events import Event, Subscription, stream
from platform_server.web.sse import SseWriter


class LiveFeedHandler(tornado.web.RequestHandler):
    """Mix in before the area's handler base: `await self.feed(sub, ...)` writes the subscription as SSE."""

    _sub: Subscription | None = None

    async def feed(
        self,
        sub: Subscription,
        heartbeat_s: float,
        opening: Callable[[SseWriter], Awaitable[bool]] | None = None,
        last: Callable[[Event], bool] = lambda event: False,
    ) -> None:
        """`opening` writes the first frames (a snapshot) and says whether to go on streaming."""
        self._sub = sub
        writer = SseWriter(self)
        try:
            if opening is not None and not await opening(writer):
                return
            await stream(writer, sub, heartbeat_s, last=last)
        finally:
            sub.close()
            writer.finish()

    def on_connection_close(self) -> None:
        if self._sub is not None:
            self._sub.close()
        super().on_connection_close()
