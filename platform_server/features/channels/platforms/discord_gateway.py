"""Discord's gateway WebSocket for one channel: identify, heartbeat, MESSAGE_CREATE, resume (Gateway docs, API v10).

`run` returns or raises when the session cannot go on; the channel runtime starts it again with backoff."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yarl

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import OnInbound, base_url
from platform_server.features.channels.platforms.outbound import call_json, session_for
from platform_server.features.channels.platforms.settings import secret_of, setting_of
from platform_server.integrations import net_guard
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel
    from platform_server.features.channels.platforms import discord as discord_adapter
    from platform_server.features.channels.platforms.discord import Discord
else:
    aiohttp = lazy_import("aiohttp")
    discord_adapter = lazy_import("platform_server.features.channels.platforms.discord")

log = logging.getLogger(__name__)

HELLO, DISPATCH, HEARTBEAT, IDENTIFY, RESUME, RECONNECT, INVALID_SESSION, HEARTBEAT_ACK = 10, 0, 1, 2, 6, 7, 9, 11
# GUILD_MESSAGES (1 << 9), DIRECT_MESSAGES (1 << 12), MESSAGE_CONTENT (1 << 15: privileged, turned on in the portal).
INTENTS = (1 << 9) | (1 << 12) | (1 << 15)
# Close codes after which "you should not reconnect" (authentication failed, invalid intents...): the runtime's backoff
# still retries, slowly, so a fixed token or intent setting is picked up without a restart.
FATAL_CLOSE = {4004, 4010, 4011, 4012, 4013, 4014}


@dataclass
class Session:
    session_id: str | None = None
    resume_url: str | None = None
    seq: int | None = None
    bot_id: str = ""
    acked: bool = True


async def run(adapter: Discord, allow_hosts: tuple[str, ...], channel: Channel, on_inbound: OnInbound) -> None:
    token = secret_of(channel, "botToken")
    if not token:
        raise ChannelError("Discord: the bot token is not set")
    async with session_for(allow_hosts, adapter, channel) as api:
        # "Get Gateway Bot ... returns an object with a valid WSS URL which the app can use when Connecting to the Gateway"
        status, data = await call_json(api, "GET", f"{base_url(adapter, channel)}/gateway/bot", headers={"Authorization": f"Bot {token}"})
        if status == 200:
            await _register_ask(api, adapter, channel, token)
    if status != 200 or not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise ChannelError(f"Discord gateway/bot: HTTP {status}")
    state = Session()
    url = data["url"]
    while True:  # one identified session, resumed across reconnects while Discord allows it
        resumable = await _connect(state.resume_url if state.session_id and state.resume_url else url, allow_hosts, token, state, on_inbound)
        if not resumable:
            state = Session()
        await asyncio.sleep(random.uniform(1, 5))  # "reconnect ... after a random amount of time between 1 and 5 seconds" (op 9)


ASK_COMMAND = {
    "name": "ask",
    "type": 1,  # CHAT_INPUT: a slash command
    "description": "Ask the agent",
    "options": [{"type": 3, "name": "prompt", "description": "Your message", "required": True}],  # 3: STRING
}


async def _register_ask(api: aiohttp.ClientSession, adapter: Discord, channel: Channel, token: str) -> None:
    """The /ask command, registered with "Bulk Overwrite Global Application Commands" (Discord has no other way to
    create one; the application is the channel's own, so its command list is ours to set)."""
    app_id = setting_of(channel, "applicationId")
    if not app_id.isdigit():
        return
    url = f"{base_url(adapter, channel)}/applications/{app_id}/commands"
    status, data = await call_json(api, "PUT", url, json=[ASK_COMMAND], headers={"Authorization": f"Bot {token}"})
    if status != 200:
        log.warning("Discord: registering /ask for channel %s failed: HTTP %s %s", channel.id, status, data)


async def _connect(url: str, allow_hosts: tuple[str, ...], token: str, state: Session, on_inbound: OnInbound) -> bool:
    """One WebSocket connection; True when the session may be resumed on the next one."""
    ws_url = yarl.URL(url).with_query({"v": "10", "encoding": "json"})
    http_url = ws_url.with_scheme("https" if ws_url.scheme == "wss" else "http")
    try:
        target = await net_guard.vet_url(http_url, allow_hosts)
    except net_guard.BlockedUrl as exc:
        raise ChannelError(f"Discord gateway URL: {exc}")
    async with aiohttp.ClientSession(connector=net_guard.pinned_connector(target)) as session:
        async with session.ws_connect(ws_url, heartbeat=None, autoping=True, max_msg_size=8 * 1024 * 1024) as ws:
            hello = await ws.receive_json(timeout=30)
            if hello.get("op") != HELLO:
                return False
            interval = float(hello["d"]["heartbeat_interval"]) / 1000
            beat = asyncio.create_task(_heartbeat(ws, interval, state))
            try:
                if state.session_id:  # "Resume ... replays missed events" with the last sequence number
                    await ws.send_json({"op": RESUME, "d": {"token": token, "session_id": state.session_id, "seq": state.seq}})
                else:
                    identify = {
                        "token": token,
                        "intents": INTENTS,
                        "properties": {"os": "linux", "browser": "platform_server", "device": "platform_server"},
                    }
                    await ws.send_json({"op": IDENTIFY, "d": identify})
                return await _read(ws, state, on_inbound)
            finally:
                beat.cancel()


async def _read(ws: aiohttp.ClientWebSocketResponse, state: Session, on_inbound: OnInbound) -> bool:
    async for msg in ws:
        if msg.type != aiohttp.WSMsgType.TEXT:
            break
        payload: dict[str, Any] = json.loads(msg.data)
        op = payload.get("op")
        if payload.get("s") is not None:
            state.seq = int(payload["s"])
        if op == DISPATCH:
            await _dispatch(payload.get("t"), payload.get("d") or {}, state, on_inbound)
        elif op == HEARTBEAT:  # "the gateway may request a heartbeat ... send one immediately"
            await ws.send_json({"op": HEARTBEAT, "d": state.seq})
        elif op == HEARTBEAT_ACK:
            state.acked = True
        elif op == RECONNECT:
            await ws.close(code=4000)
            return True
        elif op == INVALID_SESSION:  # d: whether the session may be resumed
            await ws.close(code=4000)
            return bool(payload.get("d"))
    code = ws.close_code or 1000
    if code in FATAL_CLOSE:
        raise ChannelError(f"Discord gateway closed the connection: {code}")
    return True


async def _dispatch(event: Any, data: dict[str, Any], state: Session, on_inbound: OnInbound) -> None:
    if event == "READY":
        state.session_id = str(data.get("session_id") or "") or None
        state.resume_url = data.get("resume_gateway_url")
        state.bot_id = str((data.get("user") or {}).get("id") or "")
    elif event == "MESSAGE_CREATE":
        inbound = discord_adapter.message_inbound(data, state.bot_id)
        if inbound is not None:
            try:
                await on_inbound(inbound)
            except Exception:  # one bad message must not end the session
                log.exception("Discord message %s could not be delivered", data.get("id"))


async def _heartbeat(ws: aiohttp.ClientWebSocketResponse, interval: float, state: Session) -> None:
    """ "wait heartbeat_interval * jitter" for the first beat, then every interval; a beat not ACKed by the next one
    means a zombied connection: "close the connection with a non-1000 close code, reconnect, and attempt to Resume"."""
    await asyncio.sleep(interval * random.random())
    while not ws.closed:
        if not state.acked:
            await ws.close(code=4000)
            return
        state.acked = False
        await ws.send_json({"op": HEARTBEAT, "d": state.seq})
        await asyncio.sleep(interval)
