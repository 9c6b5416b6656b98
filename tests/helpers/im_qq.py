"""A local QQ Bot Open Platform: `getAppAccessToken` and the v2 C2C / group message API as documented (the
`QQBot <token>` authorization, `msg_id` + `msg_seq` passive replies refused when repeated), and the callback side:
events signed with the bot's Ed25519 key the way the platform signs them."""
from __future__ import annotations

import json
import secrets
import time
from typing import Any

import tornado.web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.helpers.im_local import LocalPlatform
from platform_server.features.channels.platforms.qq import seed_of


class LocalQQ(LocalPlatform):
    def __init__(self, app_id: str = "102000001", app_secret: str = "naOC0ocQE3shWLAfffVLB1rhYPG7") -> None:
        self.app_id, self.app_secret = app_id, app_secret
        self.tokens: set[str] = set()
        self.seen: set[tuple[str, int]] = set()
        side = self

        class Token(tornado.web.RequestHandler):
            def post(self) -> None:
                body = json.loads(self.request.body or b"{}")
                if body.get("appId") != side.app_id or body.get("clientSecret") != side.app_secret:
                    self.set_status(401)
                    self.finish({"code": 100016, "message": "invalid appid or secret"})
                    return
                token = secrets.token_hex(12)
                side.tokens.add(token)
                self.finish({"access_token": token, "expires_in": "7200"})

        class Messages(tornado.web.RequestHandler):
            def post(self, scene: str, openid: str) -> None:
                auth = self.request.headers.get("Authorization", "")
                if not auth.startswith("QQBot ") or auth[6:] not in side.tokens:
                    self.set_status(401)
                    self.finish({"code": 11244, "message": "token not exist or expire"})
                    return
                body = json.loads(self.request.body)
                if not isinstance(body.get("content"), str) or body.get("msg_type") not in (0, 2, 3, 4, 7):
                    self.set_status(400)
                    self.finish({"code": 40034006, "message": "invalid msg_type or content"})
                    return
                key = (str(body.get("msg_id")), int(body.get("msg_seq") or 1))
                if body.get("msg_id") and key in side.seen:
                    self.set_status(400)
                    self.finish({"code": 40054005, "message": "msg is duplicated, please check msgseq"})
                    return
                side.seen.add(key)
                side.record({"path": self.request.path, "body": body})
                self.finish({"id": "ROBOT1.0_" + secrets.token_hex(6), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S+08:00")})

        super().__init__([
            (r"/app/getAppAccessToken", Token),
            (r"/v2/(users|groups)/([^/]+)/messages", Messages),
        ])

    def signed(self, payload: dict[str, Any], secret: str | None = None) -> tuple[bytes, dict[str, str]]:
        """A callback POST as the platform sends it (signed with `secret` instead to forge one)."""
        body = json.dumps(payload).encode()
        ts = str(int(time.time()))
        key = Ed25519PrivateKey.from_private_bytes(seed_of(secret or self.app_secret))
        return body, {"Content-Type": "application/json", "User-Agent": "QQBot-Callback", "X-Bot-Appid": self.app_id,
                      "X-Signature-Method": "Ed25519", "X-Signature-Timestamp": ts,
                      "X-Signature-Ed25519": key.sign(ts.encode() + body).hex()}



def c2c_event(event_id: str, user: str, content: str, message_id: str = "ROBOT1.0_m1") -> dict[str, Any]:
    return {"op": 0, "id": event_id, "s": 1, "t": "C2C_MESSAGE_CREATE",
            "d": {"author": {"user_openid": user}, "content": content, "id": message_id, "timestamp": "2026-11-26T12:00:00+08:00"}}


def group_event(event_id: str, member: str, group: str, content: str, message_id: str = "ROBOT1.0_g1") -> dict[str, Any]:
    return {"op": 0, "id": event_id, "s": 2, "t": "GROUP_AT_MESSAGE_CREATE",
            "d": {"author": {"member_openid": member}, "content": content, "group_openid": group, "id": message_id,
                  "timestamp": "2026-11-26T12:00:00+08:00"}}
