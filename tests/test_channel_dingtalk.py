"""im_a is DingTalk: robot callbacks checked by their `timestamp` + `sign` headers (HMAC-SHA256 of the timestamp and the
app secret, one hour window), answered as markdown through the message's session webhook; approvals by text."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any, AsyncIterator

import pytest

from platform_server.features.channels.models import Channel
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_dingtalk import FakeDingTalk, signed_headers
from tests.helpers.fake_openai import Script
from tests.helpers.messengers import platform_channel, settle, stored_rows, workspace_file, write_call
from tests.helpers.server import RunningServer

APP_SECRET = "gn5aSuLnzKLvtlKn1bv7dM7yH8OvbgxWn1Ht2b3Qb6ZTq8cbK3AodXZ8hyNWGHnu"
pytestmark = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))


@pytest.fixture
async def dingtalk() -> AsyncIterator[FakeDingTalk]:
    side = FakeDingTalk()
    yield side
    side.stop()


async def callback(env: ChatEnv, channel: dict[str, Any], message: dict[str, Any], secret: str = APP_SECRET,
                   timestamp_ms: int | None = None) -> Any:
    body = json.dumps(message, ensure_ascii=False).encode()
    return await env.api.post(channel["webhookUrl"], data=body, headers=signed_headers(secret, timestamp_ms))


async def test_a_signed_robot_message_is_answered_as_markdown_and_a_retry_is_one_turn(env: ChatEnv, dingtalk: FakeDingTalk,
                                                                                      server: RunningServer) -> None:
    channel = await platform_channel(env, "im_a", dingtalk.url, APP_SECRET, appKey="dingxxxxxxxx")
    message = dingtalk.message("msg0001", "user123", "# Plan\nhello **team**")
    r = await callback(env, channel, message)
    assert r.status == 200 and r.data["accepted"] is True, r.body
    session, body = (await dingtalk.wait_for())[0]
    assert body == {"msgtype": "markdown", "markdown": {"title": "Echo: # Plan", "text": "Echo: # Plan\nhello **team**"}}
    assert (await callback(env, channel, message)).data == {"accepted": False, "reason": "duplicate"}
    await callback(env, channel, dingtalk.message("msg0002", "user123", "in the group", group=True))
    _session, body = (await dingtalk.wait_for(2))[1]
    assert body["at"] == {"atUserIds": ["user123"]} and body["markdown"]["text"] == "Echo: in the group"
    await settle(server)
    assert len(env.llm.requests) == 2
    convs = (await env.api.get("/api/v1/conversations", token="alice")).data
    assert {c["endUserId"] for c in convs} == {"im_a:user123"}


async def test_a_bad_or_stale_signature_is_refused_and_nothing_is_stored(env: ChatEnv, dingtalk: FakeDingTalk) -> None:
    channel = await platform_channel(env, "im_a", dingtalk.url, APP_SECRET, appKey="dingxxxxxxxx")
    before = stored_rows()
    message = dingtalk.message("msg0009", "user123", "hi")
    assert (await callback(env, channel, message, secret="another-secret-of-the-right-length")).status == 401
    assert (await callback(env, channel, message, timestamp_ms=int(time.time() * 1000) - 3601_000)).status == 401
    body = json.dumps(message).encode()
    assert (await env.api.post(channel["webhookUrl"], data=body, headers={"Content-Type": "application/json"})).status == 401
    assert stored_rows() == before and env.llm.requests == [] and dingtalk.sent == []


async def test_a_session_webhook_on_another_host_is_not_called(env: ChatEnv, dingtalk: FakeDingTalk, server: RunningServer) -> None:
    channel = await platform_channel(env, "im_a", dingtalk.url, APP_SECRET, appKey="dingxxxxxxxx")
    message = dingtalk.message("msg0010", "user123", "hi", host="http://169.254.169.254")
    assert (await callback(env, channel, message)).status == 200
    await settle(server)
    for _ in range(200):
        row = Channel.get_by_id(int(channel["id"]))
        if row.last_error:
            break
        time.sleep(0.01)
    assert "sessionWebhook" in (row.last_error or "") and dingtalk.sent == []


async def test_approvers_answer_an_approval_request_by_text(env: ChatEnv, dingtalk: FakeDingTalk, server: RunningServer) -> None:
    channel = await platform_channel(env, "im_a", dingtalk.url, APP_SECRET, appKey="dingxxxxxxxx", approverIds=["boss"])
    env.llm.enqueue(write_call())
    await callback(env, channel, dingtalk.message("msg0020", "guest", "save a note"))
    _s, prompt = (await dingtalk.wait_for())[0]
    assert prompt["markdown"]["text"].endswith("Reply **/approve** or **/deny**.")
    await settle(server)
    await callback(env, channel, dingtalk.message("msg0021", "guest", "/approve"))
    await settle(server)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    env.llm.enqueue(write_call("boss.txt", "by the boss"), Script(text="Saved it."))
    await callback(env, channel, dingtalk.message("msg0022", "boss", "save a note"))
    await settle(server)
    await callback(env, channel, dingtalk.message("msg0023", "boss", "/approve"))
    await settle(server)
    assert workspace_file(server, env.agent_id, "boss.txt").read_text() == "by the boss"
    assert (await dingtalk.wait_for(4))[-1][1]["markdown"]["text"] == "Saved it."


async def test_stream_mode_takes_messages_over_the_websocket_acks_them_and_answers(env: ChatEnv, dingtalk: FakeDingTalk,
                                                                                   server: RunningServer) -> None:
    dingtalk.client = ("dingstreamkey", APP_SECRET)
    channel = await platform_channel(env, "im_a", dingtalk.url, APP_SECRET, appKey="dingstreamkey", mode="stream",
                                     streamBaseUrl=dingtalk.url)
    for _ in range(1500):
        if dingtalk.sockets:
            break
        await asyncio.sleep(0.01)
    assert dingtalk.opened[0]["subscriptions"] == [{"type": "CALLBACK", "topic": "/v1.0/im/bot/messages/get"}]
    ping = await dingtalk.push("SYSTEM", "ping", {"opaque": "x"})
    mid = await dingtalk.push("CALLBACK", "/v1.0/im/bot/messages/get", dingtalk.message("msg0100", "user123", "over the stream"))
    _s, body = (await dingtalk.wait_for())[0]
    assert body["markdown"]["text"] == "Echo: over the stream"
    acks = {a["headers"]["messageId"]: a for a in dingtalk.acks}
    assert acks[ping]["code"] == 200 and json.loads(acks[ping]["data"]) == {"opaque": "x"} and acks[mid]["code"] == 200
    await dingtalk.push("CALLBACK", "/v1.0/im/bot/messages/get", dingtalk.message("msg0100", "user123", "over the stream"))  # redelivered
    await dingtalk.push("SYSTEM", "disconnect", {})  # DingTalk closes this connection: the next one is opened
    for _ in range(1500):
        if len(dingtalk.opened) == 2 and dingtalk.sockets:
            break
        await asyncio.sleep(0.01)
    assert len(dingtalk.opened) == 2
    await settle(server)
    assert len(env.llm.requests) == 1
    assert (await env.api.put(f"/api/v1/channels/{channel['id']}/toggle", {"enabled": False}, token="alice")).status == 200
    for _ in range(1500):
        if not dingtalk.sockets:
            break
        await asyncio.sleep(0.01)
    assert dingtalk.sockets == []  # a disabled channel keeps no connection
