"""im_f WeCom smart bot: the signed URL check, encrypted signed callbacks that run the agent and answer through the
callback's response_url, forgeries refused with nothing stored, approval template cards."""
from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

from platform_server.features.channels.platforms.wecom import decrypt, encrypt, msg_signature
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script
from tests.helpers.im_wecom import AES_KEY, TOKEN, LocalWeCom, callback, card_event, signed_query, text_message
from tests.helpers.server import RunningServer
from tests.helpers.messengers import settle, workspace_file, write_call

LOCAL = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))


@pytest.fixture
async def wecom() -> AsyncIterator[LocalWeCom]:
    side = LocalWeCom()
    yield side
    side.stop()


async def wecom_channel(env: ChatEnv, side: LocalWeCom, **extra: Any) -> dict[str, Any]:
    settings = {"token": TOKEN, "encodingAESKey": AES_KEY, "apiBaseUrl": side.url, **extra}
    r = await env.api.post("/api/v1/channels", {"name": "wecom", "channelType": "im_f", "agentId": env.agent_id, "settings": settings},
                           token="alice")
    assert r.status == 200, r.body
    return r.data


def hook(channel: dict[str, Any], query: str) -> str:
    return f"/api/v1/channels/webhook/im_f?channelId={channel['id']}&{query}"


def test_the_crypto_follows_the_sample_librarys_url_check_example() -> None:
    # WXBizMsgCrypt's sample: Token, EncodingAESKey, CorpID and a URL check request with its signature.
    echostr = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="
    assert msg_signature(TOKEN, "1409659589", "263014780", echostr) == "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3"
    assert decrypt(AES_KEY, echostr) == (b"1616140317555161061", "wx5823bf96d3bd56c7")
    assert decrypt(AES_KEY, encrypt(AES_KEY, b"{}", "")) == (b"{}", "")


@LOCAL
async def test_the_url_check_and_a_message_answered_through_the_response_url(
        env: ChatEnv, wecom: LocalWeCom, server: RunningServer) -> None:
    channel = await wecom_channel(env, wecom)
    echostr = encrypt(AES_KEY, b"echo-123")
    check = await env.api.get(hook(channel, signed_query(echostr, echostr=echostr)))
    assert check.status == 200 and check.raw == b"echo-123"
    message = text_message("msg-1", "zhangsan", "hello **bot**", wecom.response_url())
    query, body = callback(message)
    r = await env.api.post(hook(channel, query), data=body, headers={"Content-Type": "application/json"})
    assert r.status == 200 and r.raw == b"", r.raw
    sent = await wecom.wait_until(lambda s: len(s) >= 1)
    assert sent[0] == {"msgtype": "markdown", "markdown": {"content": "Echo: hello **bot**"}}
    query, body = callback(message)  # a retry is encrypted anew but carries the same msgid
    again = await env.api.post(hook(channel, query), data=body, headers={"Content-Type": "application/json"})
    assert again.status == 200
    await settle(server)
    assert len(env.llm.requests) == 1
    group = text_message("msg-2", "lisi", "@Bot what now", wecom.response_url(), chattype="group")
    query, body = callback(group)
    await env.api.post(hook(channel, query), data=body, headers={"Content-Type": "application/json"})
    sent = await wecom.wait_until(lambda s: len(s) >= 2)
    assert sent[1]["markdown"]["content"] == "Echo: what now"
    enter = {"msgid": "msg-3", "aibotid": "aib_test", "chattype": "single", "from": {"userid": "zhangsan"}, "msgtype": "event",
             "event": {"eventtype": "enter_chat"}}
    query, body = callback(enter)
    ignored = await env.api.post(hook(channel, query), data=body)
    assert ignored.status == 200 and ignored.raw == b""  # no passive reply (a non-empty body would be read as one)
    convs = (await env.api.get("/api/v1/conversations", token="alice")).data
    assert {c["endUserId"] for c in convs} == {"im_f:zhangsan", "im_f:lisi"} and convs[0]["source"] == "im_f"


@LOCAL
async def test_forged_callbacks_are_refused_with_nothing_stored(env: ChatEnv, wecom: LocalWeCom) -> None:
    channel = await wecom_channel(env, wecom)
    message = text_message("msg-1", "zhangsan", "hi", wecom.response_url())
    query, body = callback(message, token="another-token")
    assert (await env.api.post(hook(channel, query), data=body)).status == 401
    other_key = "a" * 43
    query, body = callback(message, key=other_key)
    assert (await env.api.post(hook(channel, query), data=body)).status == 401  # signed right, does not decrypt
    foreign = encrypt(AES_KEY, b'{"msgid":"x"}', "wx5823bf96d3bd56c7")  # encrypted for another receiver
    assert (await env.api.post(hook(channel, signed_query(foreign)), data=b'{"encrypt":"%s"}' % foreign.encode())).status == 401
    echostr = encrypt(AES_KEY, b"echo")
    assert (await env.api.get(hook(channel, signed_query(echostr, token="x", echostr=echostr)))).status == 401
    query, body = callback(message)
    assert (await env.api.post(f"/api/v1/channels/webhook/im_f?channelId=31337&{query}", data=body)).status == 401
    assert env.llm.requests == [] and wecom.sent == []
    assert (await env.api.get("/api/v1/conversations", token="alice")).data == []


@LOCAL
async def test_approval_template_cards_decide_only_for_approvers(env: ChatEnv, wecom: LocalWeCom, server: RunningServer) -> None:
    channel = await wecom_channel(env, wecom, approverIds=["boss"])
    env.llm.enqueue(write_call(), Script(text="Saved it."))
    query, body = callback(text_message("msg-1", "zhangsan", "save a note", wecom.response_url()))
    await env.api.post(hook(channel, query), data=body)
    await settle(server)
    sent = await wecom.wait_until(lambda s: len(s) >= 1)
    card = sent[0]["template_card"]
    assert card["card_type"] == "button_interaction" and [b["text"] for b in card["button_list"]] == ["Approve", "Deny"]
    key = card["button_list"][0]["key"]
    query, body = callback(card_event("msg-2", "guest", key, wecom.response_url()))
    assert (await env.api.post(hook(channel, query), data=body)).status == 200
    await settle(server)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    query, body = callback(card_event("msg-3", "boss", key, wecom.response_url()))
    assert (await env.api.post(hook(channel, query), data=body)).status == 200
    await settle(server)
    assert workspace_file(server, env.agent_id, "note.txt").read_text() == "hello"
    await wecom.wait_until(lambda s: any(m.get("markdown", {}).get("content") == "Saved it." for m in s))


@LOCAL
async def test_health_and_creation_check_the_callback_keys(env: ChatEnv, wecom: LocalWeCom) -> None:
    good = await wecom_channel(env, wecom)
    assert (await env.api.get(f"/api/v1/channels/{good['id']}/health", token="carol")).data["healthy"] is True
    bad = await env.api.post("/api/v1/channels", {"name": "w", "channelType": "im_f", "agentId": env.agent_id,
                                                  "settings": {"token": TOKEN, "encodingAESKey": "not-a-key"}}, token="alice")
    assert bad.status == 400 and "encodingAESKey" in bad.msg
