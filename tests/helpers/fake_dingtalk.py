"""A local DingTalk robot endpoint for the im_a adapter, and robot callbacks signed as DingTalk signs them.

As documented for enterprise robots: a message carries a `sessionWebhook` (`/robot/sendBySession?session=...`) valid
until `sessionWebhookExpiredTime`; posting `{"msgtype": "markdown", "markdown": {"title", "text"}}` (or text) there
answers `{"errcode": 0, "errmsg": "ok"}`, an unknown session or a malformed message a non-zero errcode."""
from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any

import tornado.web
import tornado.websocket

from tests.helpers.server import free_port


def signed_headers(app_secret: str, timestamp_ms: int | None = None) -> dict[str, str]:
    ts = str(int(time.time() * 1000) if timestamp_ms is None else timestamp_ms)
    mac = hmac.new(app_secret.encode(), f"{ts}\n{app_secret}".encode(), hashlib.sha256).digest()
    return {"Content-Type": "application/json; charset=utf-8", "timestamp": ts, "sign": base64.b64encode(mac).decode()}


class FakeDingTalk:
    def __init__(self) -> None:
        self.sessions: set[str] = set()
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.changed = asyncio.Event()
        self.port = free_port()
        side = self

        class BySession(tornado.web.RequestHandler):
            def post(self) -> None:
                session = self.get_query_argument("session", "")
                if session not in side.sessions:
                    self.finish({"errcode": 300001, "errmsg": "session不存在"})
                    return
                body = json.loads(self.request.body)
                kind = body.get("msgtype")
                content = body.get(kind) if isinstance(kind, str) else None
                valid = (kind == "markdown" and isinstance(content, dict) and content.get("title") and content.get("text")) or (
                    kind == "text" and isinstance(content, dict) and content.get("content"))
                if not valid or len(json.dumps(body, ensure_ascii=False).encode()) > 20000:
                    self.finish({"errcode": 40035, "errmsg": "缺少参数 json"})
                    return
                side.sent.append((session, body))
                side.changed.set()
                self.finish({"errcode": 0, "errmsg": "ok"})

        class OpenConnection(tornado.web.RequestHandler):
            def post(self) -> None:
                body = json.loads(self.request.body)
                if (body.get("clientId"), body.get("clientSecret")) != side.client:
                    self.set_status(401)
                    self.finish({"code": "InvalidAuthentication", "message": "clientId or clientSecret is invalid"})
                    return
                side.opened.append(body)
                ticket = secrets.token_hex(8)
                side.tickets.add(ticket)
                self.finish({"endpoint": f"ws://127.0.0.1:{side.port}/stream", "ticket": ticket})

        class Stream(tornado.websocket.WebSocketHandler):
            def open(self) -> None:
                if self.get_query_argument("ticket", "") not in side.tickets:
                    self.close(1008, "invalid ticket")
                    return
                side.sockets.append(self)

            def on_message(self, message: str | bytes) -> None:
                side.acks.append(json.loads(message))
                side.changed.set()

            def on_close(self) -> None:
                if self in side.sockets:
                    side.sockets.remove(self)

        self.client: tuple[str, str] = ("", "")
        self.opened: list[dict[str, Any]] = []
        self.tickets: set[str] = set()
        self.sockets: list[Any] = []
        self.acks: list[dict[str, Any]] = []
        self.server = tornado.web.Application([
            (r"/robot/sendBySession", BySession), (r"/v1.0/gateway/connections/open", OpenConnection), (r"/stream", Stream),
        ]).listen(self.port, "127.0.0.1")

    async def push(self, frame_type: str, topic: str, data: dict[str, Any]) -> str:
        """A Stream-mode frame to every open connection; returns its messageId (the ack names it)."""
        message_id = "mid-" + secrets.token_hex(6)
        frame = {"specVersion": "1.0", "type": frame_type, "headers": {"appId": "app", "connectionId": "c1", "contentType": "application/json",
                                                                       "messageId": message_id, "time": str(int(time.time() * 1000)),
                                                                       "topic": topic}, "data": json.dumps(data)}
        for ws in list(self.sockets):
            await ws.write_message(json.dumps(frame))
        return message_id

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def message(self, msg_id: str, staff_id: str, text: str, group: bool = False, host: str | None = None) -> dict[str, Any]:
        """A robot callback body as DingTalk documents it, with a fresh session webhook."""
        session = secrets.token_hex(8)
        self.sessions.add(session)
        now = int(time.time() * 1000)
        return {"conversationId": "cid-" + ("group" if group else staff_id), "atUsers": [{"dingtalkId": "$:LWCP_v1:$bot"}],
                "chatbotCorpId": "dinge8a565", "chatbotUserId": "$:LWCP_v1:$bot", "msgId": msg_id, "senderNick": "Ann",
                "isAdmin": False, "senderStaffId": staff_id, "sessionWebhookExpiredTime": now + 5400_000, "createAt": now,
                "senderCorpId": "dinge8a565", "conversationType": "2" if group else "1", "senderId": f"$:LWCP_v1:${staff_id}",
                "conversationTitle": "Team" if group else "", "isInAtList": True,
                "sessionWebhook": f"{host or self.url}/robot/sendBySession?session={session}",
                "text": {"content": " " + text}, "msgtype": "text"}

    async def wait_for(self, count: int = 1, timeout: float = 15) -> list[tuple[str, dict[str, Any]]]:
        async def enough() -> None:
            while len(self.sent) < count:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(enough(), timeout)
        return self.sent

    def stop(self) -> None:
        for ws in list(self.sockets):
            ws.close()
        self.server.stop()
