"""A local Telegram Bot API (https://core.telegram.org/bots/api) for the im_e adapter.

It does what the documentation says the real one does with the calls the adapter makes: the bot token is part of the
path (`/bot<token>/<method>`, a wrong token answers 401 `{"ok": false, "error_code": 401, "description": "Unauthorized"}`),
parameters come as JSON, `sendMessage` checks chat_id, the 1-4096 characters of text after entities parsing, the HTML
parse mode's tags and the 1-64 byte callback_data, and answers `{"ok": true, "result": <Message>}`."""
from __future__ import annotations

import asyncio
import itertools
import json
import time
from html.parser import HTMLParser
from typing import Any

import tornado.web

from tests.helpers.server import free_port

ALLOWED_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler", "a", "tg-emoji", "code", "pre",
                "blockquote"}


class _Entities(HTMLParser):
    """Telegram's HTML parse mode: only the documented tags, properly nested; the text is what remains."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.error: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.error = self.error or f"Unsupported start tag \"{tag}\""
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.error = self.error or f"Unmatched end tag \"{tag}\""

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(text: str) -> tuple[str, str | None]:
    parser = _Entities()
    parser.feed(text)
    parser.close()
    if parser.stack and not parser.error:
        parser.error = f"Can't find end tag corresponding to start tag \"{parser.stack[-1]}\""
    return "".join(parser.text), parser.error


class FakeTelegram:
    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.changed = asyncio.Event()
        self.ids = itertools.count(100)
        self.port = free_port()
        side = self

        class Method(tornado.web.RequestHandler):
            def post(self, token: str, method: str) -> None:
                if token != side.token:
                    self._answer(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
                    return
                if not self.request.headers.get("Content-Type", "").startswith("application/json"):
                    self._answer(400, {"ok": False, "error_code": 400, "description": "Bad Request: expected JSON parameters"})
                    return
                params = json.loads(self.request.body)
                error = side.check(method, params)
                if error:
                    self._answer(400, {"ok": False, "error_code": 400, "description": f"Bad Request: {error}"})
                    return
                side.calls.append((method, params))
                side.changed.set()
                self._answer(200, {"ok": True, "result": side.result(method, params)})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                self.set_status(status)
                self.set_header("Content-Type", "application/json")
                self.finish(json.dumps(body))

        self.server = tornado.web.Application([(r"/bot([^/]+)/(\w+)", Method)]).listen(self.port, "127.0.0.1")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def check(self, method: str, p: dict[str, Any]) -> str | None:
        if method in ("sendMessage", "editMessageText"):
            if "chat_id" not in p:
                return "chat_id is empty"
            text = p.get("text") or ""
            if p.get("parse_mode") == "HTML":
                text, error = parse_html(text)
                if error:
                    return f"can't parse entities: {error}"
            if not 1 <= len(text.strip()) <= 4096:
                return "message is too long" if text.strip() else "message text is empty"
            for row in (p.get("reply_markup") or {}).get("inline_keyboard", []):
                for button in row:
                    if not 1 <= len(button.get("callback_data", "").encode()) <= 64:
                        return "BUTTON_DATA_INVALID"
        elif method == "answerCallbackQuery" and not p.get("callback_query_id"):
            return "query is too old and response timeout expired or query ID is invalid"
        elif method == "editMessageReplyMarkup" and not (p.get("chat_id") and p.get("message_id")):
            return "message to edit not found"
        elif method not in ("sendMessage", "editMessageText", "answerCallbackQuery", "editMessageReplyMarkup", "getMe"):
            return "method not found"
        return None

    def result(self, method: str, p: dict[str, Any]) -> Any:
        if method == "answerCallbackQuery":
            return True
        if method == "getMe":
            return {"id": 123456, "is_bot": True, "first_name": "Agent", "username": "agent_bot"}
        text = parse_html(p.get("text", ""))[0] if p.get("parse_mode") == "HTML" else p.get("text", "")
        message_id = p.get("message_id") or next(self.ids)
        return {"message_id": message_id, "date": int(time.time()), "chat": {"id": p["chat_id"], "type": "private"}, "text": text}

    def sent(self, method: str = "sendMessage") -> list[dict[str, Any]]:
        return [p for m, p in self.calls if m == method]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 15) -> list[dict[str, Any]]:
        async def enough() -> None:
            while len(self.sent(method)) < count:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(enough(), timeout)
        return self.sent(method)

    def stop(self) -> None:
        self.server.stop()
