"""im_b is Discord: interactions signed with Ed25519 (PING -> PONG, slash command -> deferred response then the answer
edited in), messages through the gateway WebSocket (identify, MESSAGE_CREATE, resume), answers through the REST API
in parts of at most 2000 characters, approvals as component buttons."""
from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

import pytest

from platform_server.ports import leader
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_discord import BOT_ID, FakeDiscord
from tests.helpers.fake_openai import Script
from tests.helpers.messengers import platform_channel, settle, stored_rows, workspace_file, write_call
from tests.helpers.server import RunningServer

BOT_TOKEN = "MTEwMDAwMDAwMDAwMDAwMDAwMQ.GhJkLm.fake-bot-token-for-tests"
pytestmark = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    side = FakeDiscord(BOT_TOKEN)
    yield side
    side.stop()


async def channel_for(env: ChatEnv, discord: FakeDiscord, **settings: Any) -> dict[str, Any]:
    return await platform_channel(env, "im_b", discord.url, applicationId=discord.application_id, publicKey=discord.public_key,
                                  botToken=BOT_TOKEN, **settings)


async def interact(env: ChatEnv, discord: FakeDiscord, channel: dict[str, Any], interaction: dict[str, Any], good: bool = True) -> Any:
    body = json.dumps(interaction).encode()
    headers = discord.sign(body if good else body + b" ")
    return await env.api.post(channel["webhookUrl"], data=body, headers=headers)


def message(mid: str, user: str, content: str, guild: bool = False, mentions: bool = False) -> dict[str, Any]:
    data = {"id": mid, "channel_id": "1500000000000000000", "author": {"id": user, "username": "ann"}, "content": content,
            "mentions": [{"id": BOT_ID}] if mentions else [], "type": 0}
    return {**data, "guild_id": "1600000000000000000"} if guild else data


async def test_a_signed_ping_gets_a_pong_and_a_badly_signed_one_401(env: ChatEnv, discord: FakeDiscord) -> None:
    channel = await channel_for(env, discord)
    ping = discord.interaction(1, "0")
    ping.pop("user")
    r = await interact(env, discord, channel, ping)
    assert r.status == 200 and r.body == {"type": 1}
    health = (await env.api.get(f"/api/v1/channels/{channel['id']}/health", token="carol")).data
    assert health["healthy"] is True and health["message"] == "bot agent"
    assert (await interact(env, discord, channel, ping, good=False)).status == 401


async def test_a_slash_command_is_deferred_then_answered_and_a_bad_signature_stores_nothing(env: ChatEnv, discord: FakeDiscord,
                                                                                          server: RunningServer) -> None:
    channel = await channel_for(env, discord)
    command = discord.interaction(2, "42", {"id": "9", "name": "ask", "type": 1, "options": [{"name": "prompt", "type": 3, "value": "hi there"}]})
    before = stored_rows()
    assert (await interact(env, discord, channel, command, good=False)).status == 401
    assert stored_rows() == before and env.llm.requests == []
    r = await interact(env, discord, channel, command)
    assert r.status == 200 and r.body == {"type": 5}, r.body
    method, path, body = (await discord.wait_for(prefix="/webhooks"))[0]
    assert (method, path) == ("PATCH", f"/webhooks/{discord.application_id}/{command['token']}/messages/@original")
    assert body["content"] == "Echo: hi there"
    again = await interact(env, discord, channel, command)
    assert again.body == {"type": 5}
    await settle(server)
    assert len(env.llm.requests) == 1


async def test_gateway_messages_are_answered_in_the_channel_and_the_session_resumes(env: ChatEnv, discord: FakeDiscord,
                                                                                    server: RunningServer) -> None:
    await channel_for(env, discord)
    await discord.wait_until(lambda: discord.identified and discord.sockets)
    assert discord.identified[0]["token"] == BOT_TOKEN and discord.identified[0]["intents"] & (1 << 15)
    assert [(c["name"], c["options"][0]["name"]) for c in discord.commands] == [("ask", "prompt")]  # registered for the app
    await discord.dispatch("MESSAGE_CREATE", message("m1", "42", "hello in a DM"))
    method, path, body = (await discord.wait_for(prefix="/channels"))[0]
    assert (method, path) == ("POST", "/channels/1500000000000000000/messages")
    assert body["content"] == "Echo: hello in a DM" and body["message_reference"]["message_id"] == "m1"
    await discord.dispatch("MESSAGE_CREATE", message("m2", "42", "chatter", guild=True))  # a guild message not for the bot
    discord.drop()
    await discord.wait_until(lambda: discord.resumed and discord.sockets)
    assert discord.resumed[0]["session_id"] == discord.session_id and discord.resumed[0]["seq"] >= 2
    env.llm.enqueue(Script(text=("x" * 1500 + "\n\n") * 3))
    await discord.dispatch("MESSAGE_CREATE", message("m3", "43", f"<@{BOT_ID}> tell me a lot", guild=True, mentions=True))
    sent = await discord.wait_for(4, prefix="/channels")
    assert [len(b["content"]) <= 2000 for _m, _p, b in sent[1:]] == [True, True, True]
    await settle(server)
    assert len(env.llm.requests) == 2 and env.llm.requests[1]["messages"][-1]["content"].endswith("tell me a lot")


async def test_component_buttons_approve_only_for_approvers(env: ChatEnv, discord: FakeDiscord, server: RunningServer) -> None:
    channel = await channel_for(env, discord, approverIds=["99"])
    await discord.wait_until(lambda: discord.identified and discord.sockets)
    env.llm.enqueue(write_call(), Script(text="Saved it."))
    await discord.dispatch("MESSAGE_CREATE", message("m1", "42", "save a note"))
    _m, _p, prompt = (await discord.wait_for(prefix="/channels"))[0]
    buttons = prompt["components"][0]["components"]
    assert [(b["label"], b["custom_id"], b["style"]) for b in buttons] == [("Approve", "approved:42", 1), ("Deny", "denied:42", 4)]
    await settle(server)
    press = discord.interaction(3, "42", {"custom_id": "approved:42", "component_type": 2})
    r = await interact(env, discord, channel, press)
    assert r.body == {"type": 6}
    method, path, body = (await discord.wait_for(prefix="/webhooks"))[0]
    assert method == "POST" and body == {"content": "You may not approve this call.", "flags": 64}
    await settle(server)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    press = discord.interaction(3, "99", {"custom_id": "approved:42", "component_type": 2}, guild=True)
    assert (await interact(env, discord, channel, press)).body == {"type": 6}
    calls = await discord.wait_for(3, prefix="/webhooks")
    await settle(server)
    assert workspace_file(server, env.agent_id, "note.txt").read_text() == "hello"
    hook = f"/webhooks/{discord.application_id}/{press['token']}"
    assert ("PATCH", f"{hook}/messages/@original", {"components": []}) in calls
    assert ("POST", hook) in [(m, p) for m, p, b in calls if b.get("content") == "Saved it."]


class Follower:
    """A leader lock this process does not hold (yet): another process of the deployment leads."""

    leading = False

    def is_leader(self) -> bool:
        return self.leading


async def test_the_gateway_runs_on_the_leader_only_and_starts_when_this_process_leads(env: ChatEnv, discord: FakeDiscord) -> None:
    lock = Follower()
    leader.use(lock)
    try:
        await channel_for(env, discord)  # wakes the gateway check at once: a follower starts no gateway
        await asyncio.sleep(1.5)
        assert not discord.identified and not discord.sockets
        lock.leading = True  # the leader died and this process took the lock: its next check starts the gateway
        await discord.wait_until(lambda: discord.identified and discord.sockets, timeout=15)
        lock.leading = False  # lost the lock: the gateway stops here (the new leader runs it)
        await discord.wait_until(lambda: not discord.sockets, timeout=15)
    finally:
        leader.use(leader.ThisProcess())
