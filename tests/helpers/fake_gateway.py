"""A channel gateway speaking the generic pairing protocol (README "Channel pairing") and taking replies."""
from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

import tornado.web

from tests.helpers.server import free_port


class FakeGateway:
    """Pairing sessions whose state the test moves (`advance`), and the replies posted to `/reply`."""

    def __init__(self, expires_in: float = 120) -> None:
        self.expires_in = expires_in
        self.sessions: dict[str, dict[str, Any]] = {}
        self.opened: list[dict[str, Any]] = []
        self.replies: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.replied = asyncio.Event()
        self.port = free_port()
        gateway = self

        class Sessions(tornado.web.RequestHandler):
            def post(self) -> None:
                body = json.loads(self.request.body)
                gateway.opened.append(body)
                sid = "gw-" + secrets.token_hex(6)
                gateway.sessions[sid] = {"status": "waiting"}
                self.finish({"sessionId": sid, "qrContent": f"pair://gateway/{sid}", "expiresIn": gateway.expires_in})

        class Session(tornado.web.RequestHandler):
            def get(self, sid: str) -> None:
                if sid not in gateway.sessions:
                    self.set_status(404)
                    self.finish({"error": "no such session"})
                    return
                self.finish(gateway.sessions[sid])

        class Reply(tornado.web.RequestHandler):
            def post(self) -> None:
                gateway.replies.append((dict(self.request.headers), json.loads(self.request.body)))
                gateway.replied.set()
                self.finish("ok")

        self.server = tornado.web.Application([
            (r"/pairing/sessions", Sessions), (r"/pairing/sessions/([^/]+)", Session), (r"/reply", Reply),
        ]).listen(self.port, "127.0.0.1")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def advance(self, status: str, **extra: Any) -> None:
        """Move the latest session on (the user scanned, confirmed, ...)."""
        sid = list(self.sessions)[-1]
        self.sessions[sid] = {"status": status, **extra}

    def stop(self) -> None:
        self.server.stop()
