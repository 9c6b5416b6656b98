"""A local Discord (API v10) for the im_b adapter: the REST routes the adapter calls, the gateway WebSocket, and an
application key pair that signs interactions the way Discord does.

REST as documented: `Authorization: Bot <token>` on bot routes (401 `{"message": "401: Unauthorized", "code": 0}`),
interaction webhooks authorised by a token Discord issued (404 Unknown Webhook, code 10015, otherwise), message content
up to 2000 characters and components as action rows of buttons (400 Invalid Form Body, code 50035, otherwise).
Gateway as documented: HELLO with heartbeat_interval, IDENTIFY with the bot token (close 4004 otherwise), READY with
session_id and resume_gateway_url, sequence numbers on dispatches, heartbeat ACKs, RESUME replaying missed events."""
from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import time
from typing import Any

import tornado.web
import tornado.websocket
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.helpers.server import free_port

BOT_ID = "1100000000000000001"


class FakeDiscord:
    def __init__(self, token: str, application_id: str = "1200000000000000002") -> None:
        self.token = token
        self.application_id = application_id
        self.key = Ed25519PrivateKey.generate()
        self.public_key = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.changed = asyncio.Event()
        self.ids = (str(1300000000000000000 + n) for n in itertools.count())
        self.interaction_tokens: set[str] = set()
        self.identified: list[dict[str, Any]] = []
        self.resumed: list[dict[str, Any]] = []
        self.sockets: list[Any] = []
        self.events: list[dict[str, Any]] = []  # dispatched, with their sequence numbers (for RESUME)
        self.session_id = "sess-" + secrets.token_hex(4)
        self.heartbeats = 0
        self.commands: list[dict[str, Any]] = []
        self.port = free_port()
        side = self

        class Rest(tornado.web.RequestHandler):
            def _go(self, path: str) -> None:
                body: Any = json.loads(self.request.body) if self.request.body else {}
                status, answer = side.rest(self.request.method or "", "/" + path, self.request.headers.get("Authorization", ""), body)
                self.set_status(status)
                self.set_header("Content-Type", "application/json")
                self.finish(json.dumps(answer))

            def get(self, path: str) -> None:
                self._go(path)

            def post(self, path: str) -> None:
                self._go(path)

            def patch(self, path: str) -> None:
                self._go(path)

            def put(self, path: str) -> None:
                self._go(path)

        class Gateway(tornado.websocket.WebSocketHandler):
            async def open(self) -> None:
                side.sockets.append(self)
                await self.write_message(json.dumps({"op": 10, "d": {"heartbeat_interval": 45000}, "s": None, "t": None}))

            async def on_message(self, message: str | bytes) -> None:
                payload = json.loads(message)
                op, d = payload.get("op"), payload.get("d")
                if op == 1:
                    side.heartbeats += 1
                    await self.write_message(json.dumps({"op": 11}))
                elif op == 2:
                    if d.get("token") != side.token:
                        self.close(4004, "Authentication failed.")
                        return
                    side.identified.append(d)
                    await side.dispatch("READY", {"v": 10, "user": {"id": BOT_ID, "username": "agent", "bot": True},
                                                  "session_id": side.session_id, "resume_gateway_url": side.ws_url, "guilds": []}, self)
                elif op == 6:
                    if d.get("token") != side.token or d.get("session_id") != side.session_id:
                        await self.write_message(json.dumps({"op": 9, "d": False}))
                        return
                    side.resumed.append(d)
                    for event in side.events:
                        if event["s"] > (d.get("seq") or 0):
                            await self.write_message(json.dumps(event))
                    await side.dispatch("RESUMED", {}, self)

            def on_close(self) -> None:
                if self in side.sockets:
                    side.sockets.remove(self)

        self.server = tornado.web.Application([(r"/gateway-ws", Gateway), (r"/api/v10/(.*)", Rest)]).listen(self.port, "127.0.0.1")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway-ws"

    async def dispatch(self, name: str, data: dict[str, Any], socket: Any = None) -> None:
        event = {"op": 0, "t": name, "s": len(self.events) + 1, "d": data}
        self.events.append(event)
        for ws in [socket] if socket is not None else list(self.sockets):
            await ws.write_message(json.dumps(event))

    def drop(self, code: int = 4000) -> None:
        """The gateway closes the connection (a restart on Discord's side): the client resumes."""
        for ws in list(self.sockets):
            ws.close(code, "reconnect")

    def sign(self, body: bytes) -> dict[str, str]:
        ts = str(int(time.time()))
        return {"X-Signature-Ed25519": self.key.sign(ts.encode() + body).hex(), "X-Signature-Timestamp": ts,
                "Content-Type": "application/json"}

    def interaction(self, kind: int, user_id: str, data: dict[str, Any] | None = None, guild: bool = False) -> dict[str, Any]:
        token = "itok-" + secrets.token_hex(8)
        self.interaction_tokens.add(token)
        who = {"member": {"user": {"id": user_id, "username": "u"}}, "guild_id": "1"} if guild else {"user": {"id": user_id, "username": "u"}}
        return {"id": next(self.ids), "application_id": self.application_id, "type": kind, "token": token, "version": 1,
                "channel_id": "1400000000000000000", **who, **({"data": data} if data is not None else {})}

    def rest(self, method: str, path: str, auth: str, body: Any) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if parts[0] == "webhooks":
            if len(parts) < 3 or parts[1] != self.application_id or parts[2] not in self.interaction_tokens:
                return 404, {"message": "Unknown Webhook", "code": 10015}
        elif auth != f"Bot {self.token}":
            return 401, {"message": "401: Unauthorized", "code": 0}
        if path == "/gateway/bot" and method == "GET":
            return 200, {"url": self.ws_url, "shards": 1, "session_start_limit": {"total": 1000, "remaining": 999,
                                                                                  "reset_after": 14400000, "max_concurrency": 1}}
        if path == "/users/@me" and method == "GET":
            return 200, {"id": BOT_ID, "username": "agent", "bot": True}
        if method == "PUT" and path == f"/applications/{self.application_id}/commands":
            if not isinstance(body, list) or not all(c.get("name") and c.get("description") for c in body):
                return 400, {"message": "Invalid Form Body", "code": 50035}
            self.commands = body
            return 200, [{**c, "id": next(self.ids), "application_id": self.application_id, "version": "1"} for c in body]
        error = self.form_error(body) if method in ("POST", "PATCH") else None
        if error:
            return 400, {"message": "Invalid Form Body", "code": 50035, "errors": error}
        self.calls.append((method, path, body))
        self.changed.set()
        return 200, {"id": next(self.ids), "type": 0, "content": body.get("content", ""), "channel_id": "1400000000000000000",
                     "author": {"id": BOT_ID, "bot": True}, "components": body.get("components", [])}

    @staticmethod
    def form_error(body: dict[str, Any]) -> str | None:
        if len(body.get("content") or "") > 2000:
            return "content: Must be 2000 or fewer in length."
        for row in body.get("components") or []:
            if row.get("type") != 1 or not 1 <= len(row.get("components") or []) <= 5:
                return "components: action rows hold 1 to 5 components"
            for b in row["components"]:
                if b.get("type") != 2 or b.get("style") not in (1, 2, 3, 4) or not 1 <= len(b.get("custom_id", "")) <= 100 \
                        or len(b.get("label", "")) > 80:
                    return "components: invalid button"
        return None

    def sent(self, method: str | None = None, prefix: str = "") -> list[tuple[str, str, dict[str, Any]]]:
        return [c for c in self.calls if (method is None or c[0] == method) and c[1].startswith(prefix)]

    async def wait_for(self, count: int = 1, method: str | None = None, prefix: str = "",
                       timeout: float = 15) -> list[tuple[str, str, dict[str, Any]]]:
        async def enough() -> None:
            while len(self.sent(method, prefix)) < count:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(enough(), timeout)
        return self.sent(method, prefix)

    async def wait_until(self, check: Any, timeout: float = 15) -> None:
        async def poll() -> None:
            while not check():
                await asyncio.sleep(0.02)
        await asyncio.wait_for(poll(), timeout)

    def stop(self) -> None:
        for ws in list(self.sockets):
            ws.close()
        self.server.stop()
