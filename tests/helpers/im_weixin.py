"""A local iLink bot backend (the WeChat personal-bot protocol of the openclaw-weixin plugin's protocol document):
the QR-code login (`get_bot_qrcode`, `get_qrcode_status` whose state the test moves), the long-poll `getupdates`
held until a message is queued, and `sendmessage`, which wants the bot token headers and the context_token the
user's message carried."""
from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from typing import Any

import tornado.web

from tests.helpers.im_local import LocalPlatform

HOLD_S = 1.0  # the real server holds a poll up to 35 s; short here so a stopped test does not linger


class LocalWeixin(LocalPlatform):
    def __init__(self) -> None:
        self.qrcodes: dict[str, dict[str, Any]] = {}  # qrcode -> status answer
        self.bot_tokens: set[str] = set()
        self.queue: list[dict[str, Any]] = []  # every message ever queued; the cursor is an index into it
        self.context_tokens: dict[str, str] = {}  # user -> the context_token of their latest message
        self.polls: list[dict[str, str]] = []  # headers of each getupdates
        self.queued = asyncio.Event()
        side = self

        def authorized(handler: tornado.web.RequestHandler) -> bool:
            h = handler.request.headers
            uin = h.get("X-WECHAT-UIN", "")
            try:
                uin_ok = base64.b64decode(uin, validate=True).decode().isdigit()
            except ValueError:
                uin_ok = False
            token = h.get("Authorization", "").removeprefix("Bearer ")
            return h.get("AuthorizationType") == "ilink_bot_token" and uin_ok and token in side.bot_tokens

        class QrCode(tornado.web.RequestHandler):
            def post(self) -> None:
                if self.get_query_argument("bot_type", "") != "3":
                    self.finish({"ret": -1, "errmsg": "bot_type"})
                    return
                code = "qr-" + secrets.token_hex(6)
                side.qrcodes[code] = {"status": "wait"}
                self.finish({"qrcode": code, "qrcode_img_content": f"https://liteapp.weixin.qq.com/q/{code}"})

        class QrStatus(tornado.web.RequestHandler):
            def get(self) -> None:
                state = side.qrcodes.get(self.get_query_argument("qrcode", ""))
                self.finish(state if state is not None else {"status": "expired"})

        class Updates(tornado.web.RequestHandler):
            async def post(self) -> None:
                if not authorized(self):
                    self.finish({"ret": -14, "errcode": -14, "errmsg": "session timeout"})
                    return
                side.polls.append(dict(self.request.headers))
                body = json.loads(self.request.body)
                buf = str(body.get("get_updates_buf") or "")
                start = int(buf.removeprefix("buf-")) if buf.startswith("buf-") else 0
                deadline = time.monotonic() + HOLD_S
                while len(side.queue) <= start and time.monotonic() < deadline:
                    side.queued.clear()
                    try:
                        await asyncio.wait_for(side.queued.wait(), deadline - time.monotonic())
                    except TimeoutError:
                        break
                msgs = side.queue[start:]
                self.finish({"ret": 0, "msgs": msgs, "get_updates_buf": f"buf-{start + len(msgs)}", "longpolling_timeout_ms": 35000})

        class Send(tornado.web.RequestHandler):
            def post(self) -> None:
                if not authorized(self):
                    self.finish({"ret": -14, "errcode": -14, "errmsg": "session timeout"})
                    return
                msg = json.loads(self.request.body).get("msg") or {}
                items = msg.get("item_list") or []
                to = msg.get("to_user_id")
                if not items or items[0].get("type") != 1 or not isinstance((items[0].get("text_item") or {}).get("text"), str):
                    self.finish({"ret": -2, "errmsg": "invalid item_list"})
                    return
                if to not in side.context_tokens or msg.get("context_token") != side.context_tokens[to]:
                    self.finish({"ret": -2, "errmsg": "invalid context_token"})
                    return
                side.record(msg)
                self.finish({"ret": 0, "errmsg": ""})

        super().__init__([
            (r"/ilink/bot/get_bot_qrcode", QrCode),
            (r"/ilink/bot/get_qrcode_status", QrStatus),
            (r"/ilink/bot/getupdates", Updates),
            (r"/ilink/bot/sendmessage", Send),
        ])

    def advance(self, status: str) -> str | None:
        """Move the latest login on (`scaned`, `confirmed` with a new bot token, `expired`); the token."""
        code = list(self.qrcodes)[-1]
        if status != "confirmed":
            self.qrcodes[code] = {"status": status}
            return None
        token = "bot-" + secrets.token_hex(8)
        self.bot_tokens.add(token)
        self.qrcodes[code] = {"status": "confirmed", "bot_token": token, "ilink_bot_id": "bot-id-1@im.bot", "baseurl": self.url,
                              "ilink_user_id": "owner@im.wechat"}
        return token

    def user_message(self, user: str, text: str, message_id: int) -> dict[str, Any]:
        """Queue a user's text message for the next getupdates (a redelivery reuses its message_id)."""
        context = "ctx-" + secrets.token_hex(6)
        self.context_tokens[user] = context
        msg = {"seq": len(self.queue) + 1, "message_id": message_id, "from_user_id": user, "to_user_id": "bot-id-1@im.bot",
               "create_time_ms": int(time.time() * 1000), "message_type": 1, "message_state": 2, "context_token": context,
               "item_list": [{"type": 1, "text_item": {"text": text}}]}
        self.queue.append(msg)
        self.queued.set()
        return msg

