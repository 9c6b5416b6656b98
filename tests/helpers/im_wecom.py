"""A local WeCom for smart bots: encrypted, signed callbacks as the platform sends them (the URL check GET with
`echostr`, message and template-card-event POSTs carrying a `response_url`), and the response_url endpoint, which
accepts each response_code once within its hour and checks the message shapes it documents."""
from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import urlencode

import tornado.web

from tests.helpers.im_local import LocalPlatform
from platform_server.features.channels.platforms.wecom import encrypt, msg_signature

TOKEN = "QDG6eK"
AES_KEY = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"


class LocalWeCom(LocalPlatform):
    def __init__(self) -> None:
        self.codes: dict[str, float] = {}  # response_code -> issued at
        side = self

        class Response(tornado.web.RequestHandler):
            def post(self) -> None:
                code = self.get_query_argument("response_code", "")
                issued = side.codes.pop(code, None)
                if issued is None or time.time() - issued > 3600:
                    self.finish({"errcode": 40001, "errmsg": "invalid response_code (unknown, used or expired)"})
                    return
                body = json.loads(self.request.body)
                kind = body.get("msgtype")
                ok = (kind == "markdown" and isinstance((body.get("markdown") or {}).get("content"), str)) or (
                    kind == "template_card" and isinstance((body.get("template_card") or {}).get("card_type"), str))
                if not ok:
                    self.finish({"errcode": 40008, "errmsg": "invalid message type"})
                    return
                side.record(body)
                self.finish({"errcode": 0, "errmsg": "ok"})

        super().__init__([(r"/cgi-bin/aibot/response", Response)])

    def response_url(self) -> str:
        code = secrets.token_hex(12)
        self.codes[code] = time.time()
        return f"{self.url}/cgi-bin/aibot/response?response_code={code}"



def signed_query(encrypted: str, token: str = TOKEN, **extra: str) -> str:
    ts, nonce = str(int(time.time())), str(secrets.randbelow(10**9))
    return urlencode({"msg_signature": msg_signature(token, ts, nonce, encrypted), "timestamp": ts, "nonce": nonce, **extra})


def callback(message: dict[str, Any], key: str = AES_KEY, token: str = TOKEN) -> tuple[str, bytes]:
    """(query, body) of an encrypted smart-bot callback POST."""
    encrypted = encrypt(key, json.dumps(message).encode())
    return signed_query(encrypted, token), json.dumps({"encrypt": encrypted}).encode()


def text_message(msgid: str, user: str, text: str, response_url: str, chattype: str = "single") -> dict[str, Any]:
    return {"msgid": msgid, "aibotid": "aib_test", "chatid": "wr_chat_1" if chattype == "group" else "", "chattype": chattype,
            "from": {"userid": user}, "response_url": response_url, "msgtype": "text", "text": {"content": text}}


def card_event(msgid: str, user: str, key: str, response_url: str) -> dict[str, Any]:
    return {"msgid": msgid, "aibotid": "aib_test", "chattype": "single", "from": {"userid": user}, "response_url": response_url,
            "msgtype": "event", "event": {"eventtype": "template_card_event",
                                          "template_card_event": {"card_type": "button_interaction", "event_key": key, "task_id": "t1"}}}
