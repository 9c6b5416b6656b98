"""im_e is Telegram: webhook updates checked by the setWebhook secret token, answers through the Bot API's
sendMessage (HTML parse mode, 4096-character parts), approvals as an inline keyboard."""
from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script
from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.messengers import platform_channel, settle, stored_rows, workspace_file, write_call
from tests.helpers.server import RunningServer

BOT_TOKEN = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"  # the shape of the token in the Bot API docs
pytestmark = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    side = FakeTelegram(BOT_TOKEN)
    yield side
    side.stop()


def update(update_id: int, user_id: int, text: str, chat_id: int | None = None) -> dict[str, Any]:
    """An Update with a text message, as the Bot API documents it."""
    chat = {"id": chat_id or user_id, "type": "private" if chat_id is None else "group"}
    return {"update_id": update_id, "message": {"message_id": update_id + 1000, "date": 1700000000, "text": text, "chat": chat,
                                                  "from": {"id": user_id, "is_bot": False, "first_name": "Ann"}}}


def press(update_id: int, user_id: int, data: str, chat_id: int, message_id: int) -> dict[str, Any]:
    return {"update_id": update_id, "callback_query": {"id": f"cq{update_id}", "from": {"id": user_id, "is_bot": False, "first_name": "B"},
                                                       "chat_instance": "1", "data": data,
                                                       "message": {"message_id": message_id, "date": 1, "chat": {"id": chat_id, "type": "private"}}}}


async def post(env: ChatEnv, channel: dict[str, Any], body: dict[str, Any], token: str | None) -> Any:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["X-Telegram-Bot-Api-Secret-Token"] = token
    return await env.api.post(channel["webhookUrl"], data=json.dumps(body).encode(), headers=headers)


async def test_a_telegram_update_is_answered_with_send_message_in_html_and_a_retry_is_one_turn(env: ChatEnv, telegram: FakeTelegram,
                                                                                                 server: RunningServer) -> None:
    channel = await platform_channel(env, "im_e", telegram.url, botToken=BOT_TOKEN)
    assert channel["webhookUrl"] == f"/api/v1/channels/webhook/im_e?channelId={channel['id']}"
    assert channel["secretSettingsSet"] == ["botToken"] and BOT_TOKEN not in json.dumps(channel)
    body = update(1, 42, "hello <world> & **friends**")
    r = await post(env, channel, body, channel["secret"])
    assert r.status == 200 and r.data["accepted"] is True, r.body
    sent = (await telegram.wait_for("sendMessage"))[0]
    assert sent["chat_id"] == "42" and sent["parse_mode"] == "HTML"
    assert sent["text"] == "Echo: hello &lt;world&gt; &amp; <b>friends</b>"
    assert sent["reply_parameters"] == {"message_id": 1001, "allow_sending_without_reply": True}
    again = await post(env, channel, body, channel["secret"])  # Telegram repeats an update it got no 2XY for
    assert again.data == {"accepted": False, "reason": "duplicate"}
    await settle(server)
    assert len(env.llm.requests) == 1
    convs = (await env.api.get("/api/v1/conversations", token="alice")).data
    assert convs[0]["source"] == "im_e" and convs[0]["endUserId"] == "im_e:42"
    health = (await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="carol")).data
    assert health["healthy"] is True and health["message"] == "bot @agent_bot"
    telegram.token = "654321:another-token"  # the bot token was revoked
    health = (await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="carol")).data
    assert health["healthy"] is False and "Unauthorized" in health["message"]


async def test_a_long_answer_is_split_into_parts_telegram_accepts(env: ChatEnv, telegram: FakeTelegram) -> None:
    channel = await platform_channel(env, "im_e", telegram.url, botToken=BOT_TOKEN)
    paragraph = "word " * 199 + "end.\n\n"  # 1000 characters
    env.llm.enqueue(Script(text=paragraph * 9))
    assert (await post(env, channel, update(5, 42, "tell me a lot"), channel["secret"])).status == 200
    parts = await telegram.wait_for("sendMessage", 3)
    assert [len(p["text"]) <= 4096 for p in parts] == [True, True, True]
    assert "".join(p["text"] for p in parts).count("end.") == 9


async def test_a_wrong_or_missing_secret_token_is_refused_and_nothing_is_stored(env: ChatEnv, telegram: FakeTelegram) -> None:
    channel = await platform_channel(env, "im_e", telegram.url, botToken=BOT_TOKEN)
    before = stored_rows()
    assert (await post(env, channel, update(1, 42, "hi"), "not-the-secret")).status == 401
    assert (await post(env, channel, update(1, 42, "hi"), None)).status == 401
    other = {**channel, "webhookUrl": "/api/v1/channels/webhook/im_e?channelId=999999"}
    assert (await post(env, other, update(1, 42, "hi"), channel["secret"])).status == 401
    assert stored_rows() == before and env.llm.requests == [] and telegram.calls == []


async def test_approval_buttons_decide_only_for_the_channels_approvers(env: ChatEnv, telegram: FakeTelegram, server: RunningServer) -> None:
    channel = await platform_channel(env, "im_e", telegram.url, botToken=BOT_TOKEN, approverIds=["42"])
    env.llm.enqueue(write_call(), Script(text="Saved it."))
    await post(env, channel, update(1, 7, "save a note"), channel["secret"])
    prompt = (await telegram.wait_for("sendMessage"))[0]
    keyboard = prompt["reply_markup"]["inline_keyboard"][0]
    assert [(b["text"], b["callback_data"]) for b in keyboard] == [("Approve", "approved:7"), ("Deny", "denied:7")]
    await settle(server)
    refused = await post(env, channel, press(2, 7, "approved:7", 7, 100), channel["secret"])  # the asker is no approver
    assert refused.data == {"accepted": False, "reason": "not an approver"}
    assert (await telegram.wait_for("answerCallbackQuery"))[0] == {"callback_query_id": "cq2", "text": "You may not approve this call."}
    await settle(server)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    ok = await post(env, channel, press(3, 42, "approved:7", 7, 100), channel["secret"])
    assert ok.data["accepted"] is True, ok.body
    answers = await telegram.wait_for("sendMessage", 2)
    await settle(server)
    assert workspace_file(server, env.agent_id, "note.txt").read_text() == "hello"
    assert answers[1]["chat_id"] == "7" and answers[1]["text"] == "Saved it."
    assert (await telegram.wait_for("editMessageReplyMarkup"))[0] == {"chat_id": "7", "message_id": 100, "reply_markup": {"inline_keyboard": []}}


@pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",), channel_stream_edit_interval_s=0.2)
async def test_a_slow_answer_appears_at_once_and_grows_by_edits(env: ChatEnv, telegram: FakeTelegram, server: RunningServer) -> None:
    channel = await platform_channel(env, "im_e", telegram.url, botToken=BOT_TOKEN)
    env.llm.enqueue(Script(text=["The ", "answer ", "comes ", "in ", "**slowly**."], delay_s=0.15))
    await post(env, channel, update(1, 42, "take your time"), channel["secret"])
    draft = (await telegram.wait_for("sendMessage"))[0]
    assert draft["text"] != "The answer comes in <b>slowly</b>." and "The answer comes in <b>slowly</b>.".startswith(draft["text"])
    await settle(server)
    for _ in range(1500):  # the final edit follows the turn's end
        edits = telegram.sent("editMessageText")
        if edits and edits[-1]["text"] == "The answer comes in <b>slowly</b>.":
            break
        await asyncio.sleep(0.01)
    assert edits[-1]["text"] == "The answer comes in <b>slowly</b>." and edits[-1]["message_id"] == 100
    assert len(telegram.sent("sendMessage")) == 1


@pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",), channel_stream_edit_interval_s=0)
async def test_with_streaming_off_a_slow_answer_is_sent_once_complete(env: ChatEnv, telegram: FakeTelegram, server: RunningServer) -> None:
    channel = await platform_channel(env, "im_e", telegram.url, botToken=BOT_TOKEN)
    env.llm.enqueue(Script(text=["The ", "answer ", "comes ", "in ", "**slowly**."], delay_s=0.4))  # 2 s: the default would stream
    await post(env, channel, update(1, 42, "take your time"), channel["secret"])
    await settle(server)
    assert [m["text"] for m in await telegram.wait_for("sendMessage")] == ["The answer comes in <b>slowly</b>."]
    assert telegram.sent("editMessageText") == []
