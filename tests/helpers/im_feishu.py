"""A local Feishu Open Platform: the tenant_access_token and IM v1 message endpoints as the server docs describe
them (token checked on every call, `{code, msg, data}` answers, the error codes of a bad app secret and a bad
token), and the event side: encrypted, signed event deliveries like the platform sends them."""
from __future__ import annotations

import json
import os
import secrets
import time
from typing import Any

import tornado.web

from tests.helpers.im_local import LocalPlatform
from platform_server.features.channels.platforms.feishu import encrypt, signature


class LocalFeishu(LocalPlatform):
    def __init__(self, app_id: str = "cli_test_app", app_secret: str = "app-secret-1") -> None:
        self.app_id, self.app_secret = app_id, app_secret
        self.tokens: set[str] = set()
        side = self

        class Token(tornado.web.RequestHandler):
            def post(self) -> None:
                body = json.loads(self.request.body or b"{}")
                if body.get("app_id") != side.app_id or body.get("app_secret") != side.app_secret:
                    self.finish({"code": 10014, "msg": "app secret invalid"})
                    return
                token = "t-" + secrets.token_hex(8)
                side.tokens.add(token)
                self.finish({"code": 0, "msg": "ok", "tenant_access_token": token, "expire": 7200})

        class Messages(tornado.web.RequestHandler):
            def _authorized(self) -> bool:
                auth = self.request.headers.get("Authorization", "")
                if not auth.startswith("Bearer ") or auth[7:] not in side.tokens:
                    self.set_status(400)
                    self.finish({"code": 99991663, "msg": "Invalid access token for authorization. Please make a request with token attached."})
                    return False
                return True

            def _record(self, path: str) -> None:
                body = json.loads(self.request.body)
                if body.get("msg_type") not in ("text", "post", "interactive", "image", "file") or not isinstance(body.get("content"), str):
                    self.set_status(400)
                    self.finish({"code": 230001, "msg": "Your request contains an invalid request parameter."})
                    return
                side.record({"path": path, "method": self.request.method, "body": body, "content": json.loads(body["content"])})
                mid = "om_" + secrets.token_hex(8)
                self.finish({"code": 0, "msg": "success", "data": {"message_id": mid, "msg_type": body["msg_type"]}})

            def post(self, message_id: str | None = None, action: str | None = None) -> None:
                if not self._authorized():
                    return
                id_types = ("chat_id", "open_id", "user_id", "union_id", "email")
                if message_id is None and self.get_query_argument("receive_id_type", "") not in id_types:
                    self.set_status(400)
                    self.finish({"code": 99992402, "msg": "field validation failed: receive_id_type"})
                    return
                self._record(self.request.path)

            def put(self, message_id: str, action: str | None = None) -> None:
                if self._authorized():
                    self._record(self.request.path)

            def patch(self, message_id: str, action: str | None = None) -> None:
                """Update a message card: `{content}` only, a card JSON string."""
                if not self._authorized():
                    return
                body = json.loads(self.request.body)
                if not isinstance(body.get("content"), str) or "elements" not in json.loads(body["content"]):
                    self.set_status(400)
                    self.finish({"code": 230001, "msg": "Your request contains an invalid request parameter."})
                    return
                side.record({"path": self.request.path, "method": "PATCH", "body": body, "content": json.loads(body["content"])})
                self.finish({"code": 0, "msg": "success", "data": {}})

        super().__init__([
            (r"/open-apis/auth/v3/tenant_access_token/internal", Token),
            (r"/open-apis/im/v1/messages", Messages),
            (r"/open-apis/im/v1/messages/([^/]+)/(reply)", Messages),
            (r"/open-apis/im/v1/messages/([^/]+)", Messages),
        ])



def event_delivery(payload: dict[str, Any], encrypt_key: str | None, *, sign_with: str | None = None) -> tuple[bytes, dict[str, str]]:
    """An event POST as the platform sends it: `{"encrypt": ...}` with the X-Lark-* signature headers when an
    Encrypt Key is set, the plain event otherwise. `sign_with` signs with another key (a forgery)."""
    headers = {"Content-Type": "application/json"}
    if encrypt_key is None:
        return json.dumps(payload).encode(), headers
    body = json.dumps({"encrypt": encrypt(encrypt_key, json.dumps(payload).encode(), os.urandom(16))}).encode()
    ts, nonce = str(int(time.time())), secrets.token_hex(8)
    headers.update({"X-Lark-Request-Timestamp": ts, "X-Lark-Request-Nonce": nonce,
                    "X-Lark-Signature": signature(ts, nonce, sign_with or encrypt_key, body)})
    return body, headers


def message_event(token: str, event_id: str, open_id: str, text: str, *, chat_type: str = "p2p",
                  mentions: list[dict[str, Any]] | None = None, message_id: str = "om_user_1") -> dict[str, Any]:
    """An `im.message.receive_v1` event (schema 2.0) as in the receive-message event's documentation."""
    return {
        "schema": "2.0",
        "header": {"event_id": event_id, "event_type": "im.message.receive_v1", "create_time": str(int(time.time() * 1000)),
                   "token": token, "app_id": "cli_test_app", "tenant_key": "tenant-1"},
        "event": {
            "sender": {"sender_id": {"union_id": "on_1", "user_id": "u1", "open_id": open_id}, "sender_type": "user", "tenant_key": "tenant-1"},
            "message": {"message_id": message_id, "create_time": str(int(time.time() * 1000)), "chat_id": "oc_chat_1", "chat_type": chat_type,
                        "message_type": "text", "content": json.dumps({"text": text}), "mentions": mentions or []},
        },
    }


def card_action(token: str, event_id: str, open_id: str, data: str) -> dict[str, Any]:
    """A `card.action.trigger` callback (a button press on a message card)."""
    return {
        "schema": "2.0",
        "header": {"event_id": event_id, "event_type": "card.action.trigger", "create_time": str(int(time.time() * 1000)),
                   "token": token, "app_id": "cli_test_app", "tenant_key": "tenant-1"},
        "event": {"operator": {"tenant_key": "tenant-1", "open_id": open_id, "user_id": "u2"}, "token": "c-123",
                  "action": {"value": {"data": data}, "tag": "button"}, "host": "im_message",
                  "context": {"open_message_id": "om_card_1", "open_chat_id": "oc_chat_1"}},
    }
