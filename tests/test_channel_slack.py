"""im_d is Slack: Events API requests checked by the v0 signing secret (5-minute window), url_verification answered,
DMs and mentions answered through chat.postMessage in the thread, retries deduplicated on event_id, approvals as
Block Kit buttons whose presses arrive as interactivity payloads."""
from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

import pytest

from platform_server.features.channels.platforms.slack import signature_valid
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script
from tests.helpers.fake_slack import FakeSlack, actions_body, event_body, sign
from tests.helpers.messengers import platform_channel, settle, stored_rows, workspace_file, write_call
from tests.helpers.server import RunningServer

BOT_TOKEN = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # the example signing secret of Slack's docs
pytestmark = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    side = FakeSlack(BOT_TOKEN)
    yield side
    side.stop()


async def deliver(env: ChatEnv, channel: dict[str, Any], body: bytes, secret: str = SIGNING_SECRET, skew: int = 0,
                  form: bool = False, **extra: str) -> Any:
    import time
    headers = {"Content-Type": "application/x-www-form-urlencoded" if form else "application/json",
               **sign(secret, body, int(time.time()) + skew), **extra}
    return await env.api.post(channel["webhookUrl"], data=body, headers=headers)


def dm(user: str, text: str, ts: str = "1700000001.000200") -> dict[str, Any]:
    return {"type": "message", "channel": "D024BE91L", "user": user, "text": text, "ts": ts, "channel_type": "im"}


def test_the_signature_check_accepts_the_docs_example_and_only_within_five_minutes() -> None:
    """The worked example of Slack's "Verifying requests from Slack" (a slash command body signed at 1531420618)."""
    body = ("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar"
            "&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com"
            "%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
    headers = {"X-Slack-Request-Timestamp": "1531420618",
               "X-Slack-Signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"}
    assert signature_valid(SIGNING_SECRET, headers, body.encode(), now=1531420618 + 60)
    assert not signature_valid(SIGNING_SECRET, headers, body.encode(), now=1531420618 + 301)
    assert not signature_valid(SIGNING_SECRET, headers, body.encode() + b"x", now=1531420618)


async def test_url_verification_is_answered_with_the_challenge(env: ChatEnv, slack: FakeSlack) -> None:
    channel = await platform_channel(env, "im_d", slack.url, SIGNING_SECRET, botToken=BOT_TOKEN)
    body = json.dumps({"token": "legacy", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
                       "type": "url_verification"}).encode()
    r = await deliver(env, channel, body)
    assert r.status == 200 and r.body == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}


async def test_a_dm_and_a_mention_are_answered_in_slack_and_a_retry_is_one_turn(env: ChatEnv, slack: FakeSlack, server: RunningServer) -> None:
    channel = await platform_channel(env, "im_d", slack.url, SIGNING_SECRET, botToken=BOT_TOKEN)
    assert BOT_TOKEN not in json.dumps(channel) and "secret" not in channel
    body = event_body("Ev01", dm("U2CERLKJA", "hello **bold** & <b>"))
    r = await deliver(env, channel, body)
    assert r.status == 200 and r.data["accepted"] is True, r.body
    sent = (await slack.wait_for("chat.postMessage"))[0]
    assert sent["channel"] == "D024BE91L" and "thread_ts" not in sent
    assert sent["text"] == "Echo: hello *bold* &amp; &lt;b&gt;"
    retry = await deliver(env, channel, body, **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert retry.data == {"accepted": False, "reason": "duplicate"}
    mention = {"type": "app_mention", "channel": "C0LAN2Q65", "user": "U2CERLKJA", "text": "<@U0LAN0Z89> what time is it?",
               "ts": "1515449522.000016"}
    await deliver(env, channel, event_body("Ev02", mention))
    sent = (await slack.wait_for("chat.postMessage", 2))[1]
    assert sent["channel"] == "C0LAN2Q65" and sent["thread_ts"] == "1515449522.000016" and sent["text"] == "Echo: what time is it?"
    own = {**dm("U0LAN0Z89", "Echo: hi"), "bot_id": "B1"}  # the bot's own message comes back as an event: not answered
    assert (await deliver(env, channel, event_body("Ev03", own))).data["accepted"] is False
    shared = {**dm("U2CERLKJA", "see this", "1700000002.000300"), "subtype": "file_share", "files": [{"id": "F1", "name": "plan.pdf"}]}
    await deliver(env, channel, event_body("Ev04", shared))
    sent = (await slack.wait_for("chat.postMessage", 3))[2]
    assert sent["text"] == "Echo: see this\n[the user shared: plan.pdf]"
    await settle(server)
    assert len(env.llm.requests) == 3
    health = (await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="carol")).data
    assert health["healthy"] is True and health["message"] == "bot agent in Acme"


async def test_a_bad_or_stale_signature_is_refused_and_nothing_is_stored(env: ChatEnv, slack: FakeSlack) -> None:
    channel = await platform_channel(env, "im_d", slack.url, SIGNING_SECRET, botToken=BOT_TOKEN)
    before = stored_rows()
    body = event_body("Ev09", dm("U1", "hi"))
    assert (await deliver(env, channel, body, secret="0" * 32)).status == 401
    assert (await deliver(env, channel, body, skew=-301)).status == 401
    assert (await env.api.post(channel["webhookUrl"], data=body, headers={"Content-Type": "application/json"})).status == 401
    assert stored_rows() == before and env.llm.requests == [] and slack.calls == []


async def test_block_kit_approval_buttons_decide_only_for_approvers(env: ChatEnv, slack: FakeSlack, server: RunningServer) -> None:
    channel = await platform_channel(env, "im_d", slack.url, SIGNING_SECRET, botToken=BOT_TOKEN, approverIds=["UBOSS"])
    env.llm.enqueue(write_call(), Script(text="Saved it."))
    await deliver(env, channel, event_body("Ev10", dm("UGUEST", "save a note")))
    prompt = (await slack.wait_for("chat.postMessage"))[0]
    buttons = prompt["blocks"][1]["elements"]
    assert [(b["text"]["text"], b["value"]) for b in buttons] == [("Approve", "approved:UGUEST"), ("Deny", "denied:UGUEST")]
    await settle(server)
    refused = await deliver(env, channel, actions_body("UGUEST", "approved:UGUEST", "D024BE91L", "1700000000.000100"), form=True)
    assert refused.data == {"accepted": False, "reason": "not an approver"}
    note = (await slack.wait_for("chat.postEphemeral"))[0]
    assert note == {"channel": "D024BE91L", "user": "UGUEST", "text": "You may not approve this call."}
    await settle(server)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    ok = await deliver(env, channel, actions_body("UBOSS", "approved:UGUEST", "D024BE91L", "1700000000.000100"), form=True)
    assert ok.data["accepted"] is True, ok.body
    answers = await slack.wait_for("chat.postMessage", 2)
    await settle(server)
    assert workspace_file(server, env.agent_id, "note.txt").read_text() == "hello"
    assert answers[1]["text"] == "Saved it."
    update = (await slack.wait_for("chat.update"))[0]
    assert update["ts"] == "1700000000.000100" and update["blocks"] == [] and "Approved by <@UBOSS>" in update["text"]


@pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",), channel_stream_edit_interval_s=0.2)
async def test_a_slow_answer_is_streamed_by_chat_update(env: ChatEnv, slack: FakeSlack, server: RunningServer) -> None:
    channel = await platform_channel(env, "im_d", slack.url, SIGNING_SECRET, botToken=BOT_TOKEN)
    env.llm.enqueue(Script(text=["Step ", "one, ", "step ", "two."], delay_s=0.15))
    await deliver(env, channel, event_body("Ev20", dm("U1", "go slowly")))
    draft = (await slack.wait_for("chat.postMessage"))[0]
    await settle(server)
    for _ in range(1500):  # the final update follows the turn's end
        updates = slack.sent("chat.update")
        if updates and updates[-1]["text"] == "Step one, step two.":
            break
        await asyncio.sleep(0.01)
    assert draft["text"] != "Step one, step two." and updates[-1]["text"] == "Step one, step two."
    assert updates[-1]["ts"] == "1700000000.000100" and len(slack.sent("chat.postMessage")) == 1
