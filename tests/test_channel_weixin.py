"""im_g WeChat personal bot (iLink): the login QR code and its states against a local iLink backend, the
long-poll gateway that runs the agent and answers with the message's context_token, and no webhook at all."""
from __future__ import annotations

import asyncio
import base64
from typing import Any, AsyncIterator

import pytest

from platform_server.features.channels.pairing import qr_png_data_url
from platform_server.features.channels.platforms.weixin import message_text
from tests.helpers.chat import ChatEnv
from tests.helpers.im_weixin import LocalWeixin
from tests.helpers.server import RunningServer
from tests.helpers.messengers import settle
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


@LOCAL
async def test_a_message_from_the_long_poll_is_answered_with_its_context_token_once(
        env: ChatEnv, weixin: LocalWeixin, server: RunningServer) -> None:
    channel = await weixin_channel(env, weixin)
    await log_in(env, weixin, channel)
    weixin.user_message("wxid_friend", "**hello** bot", 1001)
    sent = await weixin.wait_until(lambda s: len(s) >= 1)
    assert sent[0]["to_user_id"] == "wxid_friend" and sent[0]["context_token"] == weixin.context_tokens["wxid_friend"]
    assert sent[0]["item_list"] == [{"type": 1, "text_item": {"text": "Echo: hello bot"}}]
    assert sent[0]["message_type"] == 2 and sent[0]["message_state"] == 2
    weixin.queue.append(dict(weixin.queue[-1]))  # the backend hands the same message out again
    weixin.user_message("wxid_other", "second", 1002)
    await weixin.wait_until(lambda s: len(s) >= 2)
    await settle(server)
    assert len(env.llm.requests) == 2 and len(weixin.sent) == 2
    convs = (await env.api.get("/api/v1/conversations", token="alice")).data
    assert {c["endUserId"] for c in convs} == {"im_g:wxid_friend", "im_g:wxid_other"} and convs[0]["source"] == "im_g"
    assert weixin.polls and all(p["Authorization"].startswith("Bearer bot-") for p in weixin.polls)


@LOCAL
async def test_a_session_wechat_ended_shows_as_the_channels_error_and_health(env: ChatEnv, weixin: LocalWeixin) -> None:
    channel = await weixin_channel(env, weixin)
    health = await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="alice")
    assert health.data["healthy"] is False and "not logged in" in health.data["message"]
    token = await log_in(env, weixin, channel)
    health = await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="alice")
    assert health.data["healthy"] is True and "bot-id-1@im.bot" in health.data["message"]
    weixin.bot_tokens.discard(token)  # WeChat ends the session: getupdates answers errcode -14
    for _ in range(100):
        shown = (await env.api.get(f"/api/v1/channels/{channel['id']}", token="alice")).data
        if shown["lastError"]:
            break
        await asyncio.sleep(0.1)
    assert "-14" in shown["lastError"], shown
