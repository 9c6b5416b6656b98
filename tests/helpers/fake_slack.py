"""A local Slack Web API (https://api.slack.com/web) for the im_d adapter.

As documented: methods at `/api/<method>`, the bot token as `Authorization: Bearer xoxb-...` (a wrong one answers
HTTP 200 `{"ok": false, "error": "invalid_auth"}`), JSON bodies, `chat.postMessage` needs `channel` and `text` or
`blocks` (Block Kit checked for the block and element shapes the adapter uses, `invalid_blocks` otherwise) and answers
`{"ok": true, "channel", "ts", "message"}`; `chat.update` needs `channel` and `ts`; `chat.postEphemeral` needs `user`.
Also signs Events API and interactivity requests as Slack does (v0 HMAC of the timestamp and body)."""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
import urllib.parse
from typing import Any

import tornado.web

from tests.helpers.server import free_port


def sign(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """The headers Slack sends: X-Slack-Request-Timestamp and X-Slack-Signature = v0=hex(HMAC-SHA256("v0:ts:body"))."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    mac = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={mac}"}


def event_body(event_id: str, event: dict[str, Any]) -> bytes:
    return json.dumps({"token": "legacy", "team_id": "T1", "api_app_id": "A1", "type": "event_callback", "event_id": event_id,
                       "event_time": int(time.time()), "event": event}).encode()


def actions_body(user: str, value: str, channel: str, ts: str) -> bytes:
    payload = {"type": "block_actions", "user": {"id": user}, "trigger_id": f"trig-{user}-{ts}", "api_app_id": "A1",
               "container": {"type": "message", "message_ts": ts, "channel_id": channel}, "channel": {"id": channel},
               "message": {"ts": ts, "text": "Approval needed"},
               "actions": [{"type": "button", "action_id": "approval_0", "block_id": "b", "value": value, "action_ts": "1.2"}]}
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


def _blocks_error(blocks: Any) -> str | None:
    if not isinstance(blocks, list) or len(blocks) > 50:
        return "invalid_blocks"
    for block in blocks:
        kind = block.get("type")
        if kind == "section":
            text = block.get("text") or {}
            if text.get("type") not in ("mrkdwn", "plain_text") or not 1 <= len(text.get("text", "")) <= 3000:
                return "invalid_blocks"
        elif kind == "actions":
            for el in block.get("elements") or []:
                label = (el.get("text") or {})
                if (el.get("type") != "button" or label.get("type") != "plain_text" or not 1 <= len(label.get("text", "")) <= 75
                        or not 1 <= len(el.get("action_id", "")) <= 255 or len(el.get("value", "")) > 2000
                        or el.get("style", "primary") not in ("primary", "danger")):
                    return "invalid_blocks"
        else:
            return "invalid_blocks"
    return None


class FakeSlack:
    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.changed = asyncio.Event()
        self.ts = (f"1700000000.{n:06d}" for n in itertools.count(100))
        self.port = free_port()
        side = self

        class Method(tornado.web.RequestHandler):
            def post(self, method: str) -> None:
                if self.request.headers.get("Authorization") != f"Bearer {side.token}":
                    self.finish({"ok": False, "error": "invalid_auth"})
                    return
                if not self.request.headers.get("Content-Type", "").startswith("application/json"):
                    self.finish({"ok": False, "error": "invalid_arguments"})
                    return
                args = json.loads(self.request.body)
                answer = side.answer(method, args)
                if answer.get("ok"):
                    side.calls.append((method, args))
                    side.changed.set()
                self.finish(answer)

        self.server = tornado.web.Application([(r"/api/([\w.]+)", Method)]).listen(self.port, "127.0.0.1")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def answer(self, method: str, a: dict[str, Any]) -> dict[str, Any]:
        if method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
            if not a.get("channel"):
                return {"ok": False, "error": "channel_not_found"}
            if "blocks" in a and a["blocks"] != [] and (err := _blocks_error(a["blocks"])):
                return {"ok": False, "error": err}
            if method != "chat.update" and not a.get("text") and not a.get("blocks"):
                return {"ok": False, "error": "no_text"}
            if len(a.get("text") or "") > 40000:
                return {"ok": False, "error": "msg_too_long"}
        if method == "auth.test":
            return {"ok": True, "url": "https://acme.slack.com/", "team": "Acme", "user": "agent", "team_id": "T1", "user_id": "U0LAN0Z89",
                    "bot_id": "B1"}
        if method == "chat.postMessage":
            ts = next(self.ts)
            return {"ok": True, "channel": a["channel"], "ts": ts, "message": {"type": "message", "text": a.get("text"), "ts": ts}}
        if method == "chat.update":
            if not a.get("ts"):
                return {"ok": False, "error": "message_not_found"}
            return {"ok": True, "channel": a["channel"], "ts": a["ts"], "text": a.get("text", "")}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": next(self.ts)} if a.get("user") else {"ok": False, "error": "user_not_in_channel"}
        return {"ok": False, "error": "unknown_method"}

    def sent(self, method: str = "chat.postMessage") -> list[dict[str, Any]]:
        return [a for m, a in self.calls if m == method]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 15) -> list[dict[str, Any]]:
        async def enough() -> None:
            while len(self.sent(method)) < count:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(enough(), timeout)
        return self.sent(method)

    def stop(self) -> None:
        self.server.stop()
