"""im_g WeChat personal bot (iLink): the login QR code and its states against a local iLink backend, the
long-poll gateway that runs the agent and answers with the message's context_token, and no webhook at all."""
from __future__ import annotations

import base64
from typing import Any, AsyncIterator

import pytest

from platform_server.features.channels.pairing import qr_png_data_url
from platform_server.features.channels.platforms.weixin import message_text
from tests.helpers.chat import ChatEnv
from tests.helpers.im_weixin import LocalWeixin
from tests.helpers.server import RunningServer
from tests.test_secrets_at_rest import raw_bytes

LOCAL = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))


@pytest.fixture
async def weixin() -> AsyncIterator[LocalWeixin]:
    side = LocalWeixin()
    yield side
    side.stop()


async def weixin_channel(env: ChatEnv, side: LocalWeixin) -> dict[str, Any]:
    r = await env.api.post("/api/v1/channels", {"name": "wechat", "channelType": "im_g", "agentId": env.agent_id,
                                                "settings": {"apiBaseUrl": side.url}}, token="alice")
    assert r.status == 200, r.body
    return r.data


async def log_in(env: ChatEnv, side: LocalWeixin, channel: dict[str, Any]) -> str:
    r = await env.api.get(f"/api/v1/channels/webhook/im_g/qrcode?channelId={channel['id']}", token="alice")
    assert r.status == 200, r.body
    status_url = f"/api/v1/channels/webhook/im_g/qrcode/status?sessionId={r.data['sessionId']}"
    side.advance("scaned")
    assert (await env.api.get(status_url, token="alice")).data["status"] == "scanned"
    token = side.advance("confirmed")
    assert (await env.api.get(status_url, token="alice")).data["status"] == "confirmed"
    assert token
    return token


def test_items_read_as_text() -> None:
    msg = {"item_list": [{"type": 1, "text_item": {"text": "hi"}}, {"type": 3, "voice_item": {"text": "spoken"}},
                         {"type": 4, "file_item": {"file_name": "a.pdf"}}]}
    assert message_text(msg) == "hi\nspoken\n[file: a.pdf]"


@LOCAL
async def test_the_login_qr_code_comes_from_ilink_and_a_confirmed_scan_stores_the_bot_token_sealed(
        env: ChatEnv, weixin: LocalWeixin, server: RunningServer) -> None:
    channel = await weixin_channel(env, weixin)
    r = await env.api.get(f"/api/v1/channels/webhook/im_g/qrcode?channelId={channel['id']}", token="alice")
    assert r.status == 200 and r.data["status"] == "waiting", r.body
    code = list(weixin.qrcodes)[-1]
    assert r.data["qrcodeImage"] == qr_png_data_url(f"https://liteapp.weixin.qq.com/q/{code}")
    assert base64.b64decode(r.data["qrcodeImage"].removeprefix("data:image/png;base64,"))[:4] == b"\x89PNG"
    status_url = f"/api/v1/channels/webhook/im_g/qrcode/status?sessionId={r.data['sessionId']}"
    assert (await env.api.get(status_url, token="alice")).data["status"] == "waiting"
    weixin.advance("scaned")
    assert (await env.api.get(status_url, token="alice")).data["status"] == "scanned"
    token = weixin.advance("confirmed")
    assert (await env.api.get(status_url, token="alice")).data["status"] == "confirmed"
    shown = (await env.api.get(f"/api/v1/channels/{channel['id']}", token="alice")).data
    assert shown["paired"] is True and shown["pairedAccountId"] == "bot-id-1@im.bot"
    assert token and token not in str(shown) and token.encode() not in raw_bytes(server)
    again = await env.api.get(f"/api/v1/channels/webhook/im_g/qrcode?channelId={channel['id']}", token="alice")
    weixin.advance("expired")
    r = await env.api.get(f"/api/v1/channels/webhook/im_g/qrcode/status?sessionId={again.data['sessionId']}", token="alice")
    assert r.data["status"] == "expired"
    assert (await env.api.get(f"/api/v1/channels/webhook/im_g/qrcode?channelId={channel['id']}", token="bob")).status == 403


@LOCAL
async def test_the_webhook_takes_nothing_for_wechat(env: ChatEnv, weixin: LocalWeixin) -> None:
    channel = await weixin_channel(env, weixin)
    r = await env.api.post(f"/api/v1/channels/webhook/im_g?channelId={channel['id']}", {"text": "hi"})
    assert r.status == 403
    assert env.llm.requests == [] and (await env.api.get("/api/v1/conversations", token="alice")).data == []
