"""The HTTP side of a local messaging platform (tests/helpers/im_*.py): a port bound at once (no race with other
processes), what its send API accepted in `sent`, and a wait for what a task sends after the turn ends."""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

import tornado.httpserver
import tornado.netutil
import tornado.web


class LocalPlatform:
    def __init__(self, routes: list[Any]) -> None:
        self.sent: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self.port = sockets[0].getsockname()[1]
        self.server = tornado.httpserver.HTTPServer(tornado.web.Application(routes))
        self.server.add_sockets(sockets)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, item: dict[str, Any]) -> None:
        self.sent.append(item)
        self.arrived.set()

    async def wait_until(self, check: Callable[[list[dict[str, Any]]], bool], timeout: float = 15) -> list[dict[str, Any]]:
        """Wait until `check(sent)` holds."""
        deadline = time.monotonic() + timeout
        while not check(self.sent):
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), max(deadline - time.monotonic(), 0.01))
        return self.sent

    def stop(self) -> None:
        self.server.stop()
