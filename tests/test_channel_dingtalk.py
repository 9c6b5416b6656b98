"""im_a is DingTalk: robot callbacks checked by their `timestamp` + `sign` headers (HMAC-SHA256 of the timestamp and the
app secret, one hour window), answered as markdown through the message's session webhook; approvals by text."""
from __future__ import annotations

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
