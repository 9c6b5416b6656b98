"""Channels: signed inbound webhooks run the agent and post signed replies; the public webchat streams."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any, AsyncIterator

import pytest
import tornado.httpserver
import tornado.netutil
import tornado.web

from platform_server.features.channels.service import sign
from tests.helpers.chat import ChatEnv, names, text_of


class PlatformSide:
    """The messaging platform: receives the signed replies on a local port."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.arrived = asyncio.Event()
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")  # bound now: no port race with other processes
        self.port = sockets[0].getsockname()[1]
        side = self

        class Reply(tornado.web.RequestHandler):
            def post(self) -> None:
                side.received.append((dict(self.request.headers), self.request.body))
                side.arrived.set()
                self.finish("ok")

        self.server = tornado.httpserver.HTTPServer(tornado.web.Application([(r"/reply", Reply)]))
        self.server.add_sockets(sockets)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/reply"


@pytest.fixture
async def platform_side() -> AsyncIterator[PlatformSide]:
    side = PlatformSide()
    yield side
    side.server.stop()


async def make_channel(env: ChatEnv, kind: str, reply_url: str | None = None) -> dict[str, Any]:
    body = {"name": f"my {kind}", "channelType": kind, "agentId": env.agent_id}
    if reply_url:
        body["replyUrl"] = reply_url
    r = await env.api.post("/api/v1/channels", body, token="alice")
    assert r.status == 200, r.body
    return r.data


def signed(secret: str, payload: dict[str, Any], skew: int = 0) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    ts = str(int(time.time()) + skew)
    return body, {"Content-Type": "application/json", "X-Timestamp": ts, "X-Signature": sign(secret, ts, body)}


@pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))
async def test_a_signed_inbound_message_is_answered_on_the_reply_url(env: ChatEnv, platform_side: PlatformSide) -> None:
    channel = await make_channel(env, "im_a", platform_side.url)
    assert "secret" in channel and (await env.api.get(f"/api/v1/channels/{channel['id']}", token="alice")).data.get("secret") is None
    payload = {"channelId": channel["id"], "messageId": "m1", "sender": {"id": "user@im"}, "text": "hello bot"}
    body, headers = signed(channel["secret"], payload)
    r = await env.api.post("/api/v1/channels/webhook/im_a", data=body, headers=headers)
    assert r.status == 200 and r.data["accepted"] is True, r.body
    await asyncio.wait_for(platform_side.arrived.wait(), 10)
    reply_headers, reply_body = platform_side.received[0]
    assert reply_headers["X-Signature"] == sign(channel["secret"], reply_headers["X-Timestamp"], reply_body)
    reply = json.loads(reply_body)
    assert reply["text"] == "Echo: hello bot" and reply["recipient"] == "user@im" and reply["inReplyTo"] == "m1"
    again = await env.api.post("/api/v1/channels/webhook/im_a", data=body, headers=headers)
    assert again.data == {"accepted": False, "reason": "duplicate"}
    convs = (await env.api.get("/api/v1/conversations", token="alice")).data
    assert convs[0]["source"] == "im_a" and convs[0]["endUserId"] == "im_a:user@im"


async def test_unsigned_stale_or_wrongly_signed_webhooks_are_refused(env: ChatEnv) -> None:
    channel = await make_channel(env, "im_a", "https://example.invalid/reply")
    payload = {"channelId": channel["id"], "messageId": "m1", "sender": {"id": "u"}, "text": "hi"}
    body, headers = signed("wrong-secret-wrong-secret", payload)
    assert (await env.api.post("/api/v1/channels/webhook/im_a", data=body, headers=headers)).status == 401
    body, headers = signed(channel["secret"], payload, skew=-3600)
    assert (await env.api.post("/api/v1/channels/webhook/im_a", data=body, headers=headers)).status == 401
    assert (await env.api.post("/api/v1/channels/webhook/im_a", data=body)).status == 401
    body, headers = signed(channel["secret"], payload)
    assert (await env.api.post("/api/v1/channels/webhook/im_f", data=body, headers=headers)).status == 401
    assert env.llm.requests == []


async def test_channel_management_is_for_workspace_admins_and_checks_its_input(env: ChatEnv) -> None:
    body = {"name": "x", "channelType": "im_e", "agentId": env.agent_id,
            "settings": {"botToken": "123:abc", "apiBaseUrl": "https://example.invalid/bot"}}
    assert (await env.api.post("/api/v1/channels", body, token="bob")).status == 403
    missing = await env.api.post("/api/v1/channels", {**body, "settings": {}}, token="alice")
    assert missing.status == 400 and "botToken" in missing.body["msg"]
    bad_url = await env.api.post("/api/v1/channels", {**body, "settings": {"botToken": "t", "apiBaseUrl": "ftp://x"}}, token="alice")
    assert bad_url.status == 400 and "apiBaseUrl" in bad_url.body["msg"]
    assert (await env.api.post("/api/v1/channels", {**body, "channelType": "im_z"}, token="alice")).status == 400
    assert (await env.api.post("/api/v1/channels", {**body, "agentId": "1"}, token="alice")).status == 400
    blocked = {**body, "settings": {"botToken": "t", "apiBaseUrl": "http://169.254.169.254/x"}}
    pre = await env.api.post("/api/v1/channels/preflight", blocked, token="alice")
    assert pre.data["valid"] is False and pre.data["problems"][0].startswith("settings.apiBaseUrl")
    created = (await env.api.post("/api/v1/channels", body, token="alice")).data
    assert "123:abc" not in str(created) and created["settings"] == {"apiBaseUrl": "https://example.invalid/bot"}
    assert [c["id"] for c in (await env.api.get("/api/v1/channels/type/im_e", token="carol")).data] == [created["id"]]
    health = await env.api.get(f"/api/v1/channels/{created['id']}/health", token="carol")
    assert health.data["healthy"] is False
    r = await env.api.put(f"/api/v1/channels/{created['id']}/toggle", {"enabled": False}, token="alice")
    assert r.data["enabled"] is False and r.data["secretSettingsSet"] == ["botToken"]  # kept through the update
    assert (await env.api.get("/api/v1/channels/status", token="bob")).status == 403
    status = await env.api.get("/api/v1/channels/status", token="alice")
    assert status.data["byType"]["im_e"]["unhealthy"] == 1
    assert (await env.api.get("/api/v1/channels", token="dave", workspace=env.people["dave"]["workspace"])).data == []
    assert (await env.api.delete(f"/api/v1/channels/{created['id']}", token="alice")).status == 200


async def test_the_console_is_told_each_platforms_name_fields_and_setup_help(env: ChatEnv) -> None:
    r = await env.api.get("/api/v1/channels/platforms", token="carol")
    assert r.status == 200, r.body
    by_type = {p["channelType"]: p for p in r.data}
    assert {"im_a", "im_b", "im_d", "im_e"} <= set(by_type)
    telegram = by_type["im_e"]
    assert telegram["label"] == "Telegram" and "http" not in telegram["help"]
    assert [(f["key"], f["secret"]) for f in telegram["fields"]] == [("botToken", True), ("apiBaseUrl", False)]
    assert telegram["webhookPath"] == "/api/v1/channels/webhook/im_e?channelId={id}"


async def test_the_public_webchat_streams_answers_per_session(env: ChatEnv) -> None:
    channel = await make_channel(env, "webchat")
    token = channel["publicToken"]
    config = await env.api.get("/api/v1/channels/webchat/config", params={"token": token})
    assert config.data["agentName"] == "Helper"
    assert (await env.api.get("/api/v1/channels/webchat/config", params={"token": "nope"})).status == 404
    events = await env.api.sse("POST", "/api/v1/channels/webchat/stream", {"token": token, "sessionId": "s1", "message": "hi"})
    assert names(events)[0] == "meta" and text_of(events) == "Echo: hi"
    bad = await env.api.sse("POST", "/api/v1/channels/webchat/stream", {"token": "nope", "sessionId": "s1", "message": "hi"})
    assert names(bad) == ["error"]
