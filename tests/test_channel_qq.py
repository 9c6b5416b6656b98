"""im_h QQ: Ed25519-signed callbacks run the agent and the answer arrives as a passive reply at the local
platform's v2 message API; the callback-address validation answers as the docs' example; forgeries are refused."""
from __future__ import annotations

import json
from typing import Any, AsyncIterator

import pytest

from platform_server.features.channels.platforms.qq import plain_text, seed_of, sign_validation
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script
from tests.helpers.im_qq import LocalQQ, c2c_event, group_event
from tests.helpers.server import RunningServer
from tests.helpers.messengers import settle, workspace_file, write_call

LOCAL = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))


@pytest.fixture
async def qq() -> AsyncIterator[LocalQQ]:
    side = LocalQQ()
    yield side
    side.stop()


async def qq_channel(env: ChatEnv, side: LocalQQ, **extra: Any) -> dict[str, Any]:
    settings = {"appId": side.app_id, "appSecret": side.app_secret, "apiBaseUrl": side.url, "authBaseUrl": side.url, **extra}
    r = await env.api.post("/api/v1/channels", {"name": "qq", "channelType": "im_h", "agentId": env.agent_id, "settings": settings},
                           token="alice")
    assert r.status == 200, r.body
    return r.data


async def post(env: ChatEnv, channel: dict[str, Any], signed: tuple[bytes, dict[str, str]]) -> Any:
    body, headers = signed
    return await env.api.post(f"/api/v1/channels/webhook/im_h?channelId={channel['id']}", data=body, headers=headers)


def test_the_validation_signature_matches_the_documented_example() -> None:
    # The webhook documentation's example: AppSecret, event_ts and plain_token -> this signature.
    expected = ("87befc99c42c651b3aac0278e71ada338433ae26fcb24307bdc5ad38c1adc2d0"
                "1bcfcadc0842edac85e85205028a1132afe09280305f13aa6909ffc2d652c706")
    assert sign_validation("DG5g3B4j9X2KOErG", "1725442341", "Arq0D5A61EgUu4OxUvOp") == expected
    # ... and its seed derivation example: the 28-byte secret repeated, cut to 32 bytes.
    assert seed_of("naOC0ocQE3shWLAfffVLB1rhYPG7") == b"naOC0ocQE3shWLAfffVLB1rhYPG7naOC"


def test_markdown_is_flattened_for_plain_text_messages() -> None:
    assert plain_text("# Hi\n**bold** and [docs](https://x.y)") == "Hi\nbold and docs (https://x.y)"
    assert plain_text("- one\n```py\nx = 1\n```\n`y`") == "• one\nx = 1\ny"


@LOCAL
async def test_a_signed_c2c_message_gets_a_passive_reply_and_a_redelivery_runs_once(
        env: ChatEnv, qq: LocalQQ, server: RunningServer) -> None:
    channel = await qq_channel(env, qq)
    validation = {"op": 13, "d": {"plain_token": "Arq0D5A61EgUu4OxUvOp", "event_ts": "1725442341"}}
    v = await post(env, channel, (json.dumps(validation).encode(), {"Content-Type": "application/json", "X-Bot-Appid": qq.app_id}))
    assert v.status == 200 and v.body == {"plain_token": "Arq0D5A61EgUu4OxUvOp",
                                          "signature": sign_validation(qq.app_secret, "1725442341", "Arq0D5A61EgUu4OxUvOp")}
    event = c2c_event("C2C_MESSAGE_CREATE:e1", "user-openid-1", "**hello** bot")
    r = await post(env, channel, qq.signed(event))
    assert r.status == 200 and r.body == {"op": 12, "d": 0}, r.body
    sent = await qq.wait_until(lambda s: len(s) >= 1)
    assert sent[0]["path"] == "/v2/users/user-openid-1/messages"
    assert sent[0]["body"]["content"] == "Echo: hello bot" and sent[0]["body"]["msg_type"] == 0
    assert sent[0]["body"]["msg_id"] == "ROBOT1.0_m1"
    again = await post(env, channel, qq.signed(event))
    assert again.status == 200 and again.body == {"op": 12, "d": 0}
    await settle(server)
    assert len(env.llm.requests) == 1 and len(qq.sent) == 1
    group = await post(env, channel, qq.signed(group_event("GROUP_AT_MESSAGE_CREATE:e2", "member-1", "group-1", " hi all")))
    assert group.status == 200
    sent = await qq.wait_until(lambda s: len(s) >= 2)
    assert sent[1]["path"] == "/v2/groups/group-1/messages" and sent[1]["body"]["content"] == "Echo: hi all"
    added = {"op": 0, "id": "FRIEND_ADD:e3", "t": "FRIEND_ADD", "d": {"openid": "user-openid-2", "timestamp": 1}}
    assert (await post(env, channel, qq.signed(added))).body == {"op": 12, "d": 0}
    convs = (await env.api.get("/api/v1/conversations", token="alice")).data
    assert {c["endUserId"] for c in convs} == {"im_h:user-openid-1", "im_h:member-1"} and convs[0]["source"] == "im_h"


@LOCAL
async def test_badly_signed_callbacks_are_refused_with_nothing_stored(env: ChatEnv, qq: LocalQQ) -> None:
    channel = await qq_channel(env, qq)
    event = c2c_event("C2C_MESSAGE_CREATE:e1", "u1", "hi")
    assert (await post(env, channel, qq.signed(event, secret="another-secret-of-someone"))).status == 401
    body, headers = qq.signed(event)
    tampered = body.replace(b"hi", b"ho")
    assert (await post(env, channel, (tampered, headers))).status == 401
    assert (await post(env, channel, (body, {"Content-Type": "application/json"}))).status == 401
    unknown = await env.api.post("/api/v1/channels/webhook/im_h?channelId=424242", data=body, headers=headers)
    assert unknown.status == 401
    # The validation request only signs well-formed tokens (never a string that could pass as timestamp + body).
    odd = {"op": 13, "d": {"plain_token": '{"op":0}', "event_ts": "1"}}
    assert (await post(env, channel, (json.dumps(odd).encode(), {"Content-Type": "application/json"}))).status == 400
    assert env.llm.requests == [] and qq.sent == []
    assert (await env.api.get("/api/v1/conversations", token="alice")).data == []


@LOCAL
async def test_an_approval_prompt_names_the_text_commands_and_an_approver_decides(
        env: ChatEnv, qq: LocalQQ, server: RunningServer) -> None:
    channel = await qq_channel(env, qq, approverIds=["boss"])
    env.llm.enqueue(write_call(), Script(text="Saved it."))
    await post(env, channel, qq.signed(c2c_event("e1", "boss", "save a note", "m1")))
    await settle(server)
    await qq.wait_until(lambda s: any("Reply /approve or /deny." in m["body"]["content"] for m in s))
    await post(env, channel, qq.signed(c2c_event("e2", "boss", "/approve", "m2")))
    await settle(server)
    assert workspace_file(server, env.agent_id, "note.txt").read_text() == "hello"
    await qq.wait_until(lambda s: any(m["body"]["content"] == "Saved it." for m in s))


@LOCAL
async def test_health_asks_for_an_access_token(env: ChatEnv, qq: LocalQQ) -> None:
    channel = await qq_channel(env, qq)
    assert (await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="carol")).data["healthy"] is True
    qq.app_secret = "rotated-on-the-platform"
    health = await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="carol")
    assert health.data["healthy"] is False and "invalid appid or secret" in health.data["message"]
