"""im_c Feishu / Lark: encrypted and signed event deliveries run the agent, the answer arrives at the local
platform's message API as a reply; forgeries are refused with nothing stored; approval cards work."""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, AsyncIterator

import pytest

from platform_server.features.channels.platforms.feishu import decrypt, message_text, signature
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script
from tests.helpers.im_feishu import LocalFeishu, card_action, event_delivery, message_event
from tests.helpers.server import RunningServer
from tests.helpers.messengers import settle, workspace_file, write_call

LOCAL = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))
TOKEN, KEY = "verify-token-1", "encrypt-key-1"


@pytest.fixture
async def feishu() -> AsyncIterator[LocalFeishu]:
    side = LocalFeishu()
    yield side
    side.stop()


async def feishu_channel(env: ChatEnv, side: LocalFeishu, **extra: Any) -> dict[str, Any]:
    settings = {"appId": side.app_id, "appSecret": side.app_secret, "verificationToken": TOKEN, "encryptKey": KEY,
                "apiBaseUrl": side.url, **extra}
    r = await env.api.post("/api/v1/channels", {"name": "lark", "channelType": "im_c", "agentId": env.agent_id, "settings": settings},
                           token="alice")
    assert r.status == 200, r.body
    assert "appSecret" not in json.dumps(r.data["settings"]) and r.data["webhookUrl"].endswith(f"im_c?channelId={r.data['id']}")
    return r.data


async def deliver(env: ChatEnv, channel: dict[str, Any], payload: dict[str, Any], key: str | None = KEY, **kw: Any) -> Any:
    body, headers = event_delivery(payload, key, **kw)
    return await env.api.post(f"/api/v1/channels/webhook/im_c?channelId={channel['id']}", data=body, headers=headers)


def test_decryption_follows_the_documented_example() -> None:
    # The event subscription guide's decryption example: Encrypt Key "test key" -> "hello world".
    assert decrypt("test key", "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=") == b"hello world"
    body = b'{"encrypt":"x"}'
    assert signature("1", "n", "k", body) == hashlib.sha256(b"1nk" + body).hexdigest()


def test_text_and_post_messages_read_as_text_with_mentions() -> None:
    mentions = [{"key": "@_user_1", "name": "Bot"}, {"key": "@_user_2", "name": "Tom"}]
    text = {"message_type": "text", "content": json.dumps({"text": "@_user_1 ask @_user_2 please"}), "mentions": mentions}
    assert message_text(text) == "ask @Tom please"
    paragraph = [{"tag": "text", "text": "hi "}, {"tag": "a", "text": "link", "href": "h"}]
    post = {"message_type": "post", "content": json.dumps({"title": "T", "content": [paragraph]})}
    assert message_text(post) == "T\nhi link"


@LOCAL
async def test_an_encrypted_signed_message_is_answered_as_a_reply_and_a_retry_runs_once(
        env: ChatEnv, feishu: LocalFeishu, server: RunningServer) -> None:
    channel = await feishu_channel(env, feishu)
    challenge = await deliver(env, channel, {"challenge": "ch-1", "token": TOKEN, "type": "url_verification"})
    assert challenge.status == 200 and challenge.body == {"challenge": "ch-1"}
    event = message_event(TOKEN, "ev-1", "ou_alice", "hello bot\n# Title")
    r = await deliver(env, channel, event)
    assert r.status == 200, r.body
    sent = await feishu.wait_until(lambda s: len(s) >= 1)
    assert sent[0]["path"] == "/open-apis/im/v1/messages/om_user_1/reply" and sent[0]["body"]["msg_type"] == "post"
    assert sent[0]["content"] == {"zh_cn": {"content": [[{"tag": "md", "text": "Echo: hello bot\n**Title**"}]]}}
    again = await deliver(env, channel, event)  # the platform retries a delivery it did not see answered in time
    assert again.data == {"accepted": False, "reason": "duplicate"}
    await settle(server)
    assert len(env.llm.requests) == 1 and len(feishu.sent) == 1
    convs = (await env.api.get("/api/v1/conversations", token="alice")).data
    assert convs[0]["source"] == "im_c" and convs[0]["endUserId"] == "im_c:ou_alice"


@LOCAL
async def test_forged_or_mistokened_events_are_refused_with_nothing_stored(env: ChatEnv, feishu: LocalFeishu) -> None:
    channel = await feishu_channel(env, feishu)
    url = f"/api/v1/channels/webhook/im_c?channelId={channel['id']}"
    forged = await deliver(env, channel, message_event(TOKEN, "ev-2", "ou_x", "hi"), sign_with="another-key")
    assert forged.status == 401, forged.body
    wrong_token = await deliver(env, channel, message_event("not-the-token", "ev-3", "ou_x", "hi"))
    assert wrong_token.status == 401
    other_key = await deliver(env, channel, message_event(TOKEN, "ev-4", "ou_x", "hi"), key="another-key", sign_with=KEY)
    assert other_key.status == 401  # signed right but encrypted with another key: does not decrypt
    plain = await deliver(env, channel, message_event(TOKEN, "ev-5", "ou_x", "hi"), key=None)
    assert plain.status == 401  # a channel with an Encrypt Key takes only signed deliveries
    body, headers = event_delivery(message_event(TOKEN, "ev-6", "ou_x", "hi"), KEY)
    unknown = await env.api.post("/api/v1/channels/webhook/im_c?channelId=999999", data=body, headers=headers)
    assert unknown.status == 401
    bad_challenge = await deliver(env, channel, {"challenge": "c", "token": "wrong", "type": "url_verification"})
    assert bad_challenge.status == 401
    assert (await env.api.post(url, data=b"{}", headers={"Content-Type": "application/json"})).status == 401
    assert env.llm.requests == [] and feishu.sent == []
    assert (await env.api.get("/api/v1/conversations", token="alice")).data == []


@LOCAL
async def test_a_channel_without_encrypt_key_checks_the_verification_token(env: ChatEnv, feishu: LocalFeishu) -> None:
    r = await env.api.post("/api/v1/channels", {"name": "lark", "channelType": "im_c", "agentId": env.agent_id, "settings": {
        "appId": feishu.app_id, "appSecret": feishu.app_secret, "verificationToken": TOKEN, "apiBaseUrl": feishu.url}}, token="alice")
    channel = r.data
    assert (await deliver(env, channel, message_event("wrong", "ev-1", "ou_a", "hi"), key=None)).status == 401
    assert (await deliver(env, channel, message_event(TOKEN, "ev-2", "ou_a", "hi"), key=None)).status == 200
    assert (await feishu.wait_until(lambda s: len(s) >= 1))[0]["content"]["zh_cn"]["content"][0][0]["text"] == "Echo: hi"


@LOCAL
async def test_approval_cards_resolve_the_pending_call_only_for_approvers(
        env: ChatEnv, feishu: LocalFeishu, server: RunningServer) -> None:
    channel = await feishu_channel(env, feishu, approverIds=["ou_boss"])
    env.llm.enqueue(write_call(), Script(text="Saved it."))
    await deliver(env, channel, message_event(TOKEN, "ev-1", "ou_alice", "save a note"))
    await settle(server)
    sent = await feishu.wait_until(lambda s: len(s) >= 1)
    card = next(s for s in sent if s["body"]["msg_type"] == "interactive")["content"]
    buttons = card["elements"][-1]["actions"]
    assert [b["text"]["content"] for b in buttons] == ["Approve", "Deny"]
    approve = buttons[0]["value"]["data"]
    refused = await deliver(env, channel, card_action(TOKEN, "ev-2", "ou_guest", approve))
    assert refused.status == 200 and refused.body == {"toast": {"type": "info", "content": "Received"}}
    await settle(server)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    pressed = await deliver(env, channel, card_action(TOKEN, "ev-3", "ou_boss", approve))
    assert pressed.status == 200
    await settle(server)
    assert workspace_file(server, env.agent_id, "note.txt").read_text() == "hello"
    await feishu.wait_until(lambda sent: any("Saved it." in json.dumps(s["content"]) for s in sent))
    await feishu.wait_until(lambda sent: any(s["method"] == "PATCH" for s in sent))
    patched = [s for s in feishu.sent if s["method"] == "PATCH"]  # only the approver's press updated the card
    assert [(p["path"], p["content"]["elements"]) for p in patched] == [
        ("/open-apis/im/v1/messages/om_card_1", [{"tag": "markdown", "content": "Approved."}])]


def test_the_decryption_key_is_the_sha256_of_the_encrypt_key() -> None:
    from tests.helpers.im_feishu import encrypt

    data = encrypt("k", b'{"a":1}', b"\x00" * 16)
    assert base64.b64decode(data)[:16] == b"\x00" * 16 and decrypt("k", data) == b'{"a":1}'


@LOCAL
async def test_health_asks_for_a_tenant_access_token(env: ChatEnv, feishu: LocalFeishu) -> None:
    channel = await feishu_channel(env, feishu)
    health = await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="carol")
    assert health.data["healthy"] is True, health.body
    feishu.app_secret = "rotated-on-the-platform"
    health = await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="carol")
    assert health.data["healthy"] is False and "10014" in health.data["message"]


async def test_the_console_is_told_the_names_fields_and_help_of_feishu_wecom_wechat_and_qq(env: ChatEnv) -> None:
    by_type = {p["channelType"]: p for p in (await env.api.get("/api/v1/channels/platforms", token="carol")).data}
    expected = {"im_c": ("Feishu / Lark", ["appId", "appSecret", "verificationToken", "encryptKey"]),
                "im_f": ("WeCom", ["token", "encodingAESKey", "botId"]),
                "im_g": ("WeChat", ["botToken"]),
                "im_h": ("QQ", ["appId", "appSecret", "authBaseUrl"])}
    for kind, (label, keys) in expected.items():
        p = by_type[kind]
        assert p["label"] == label and [f["key"] for f in p["fields"]] == [*keys, "apiBaseUrl"]
        assert len(p["help"]) > 100 and "http" not in p["help"]
    assert [f["key"] for f in by_type["im_c"]["fields"] if f["secret"]] == ["appSecret", "verificationToken", "encryptKey"]
