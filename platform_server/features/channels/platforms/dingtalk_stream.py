"""DingTalk Stream mode for one im_a channel: the robot's messages over a WebSocket this server opens, no public URL.

The documented protocol, as the official SDK (dingtalk-stream) speaks it: POST `/v1.0/gateway/connections/open`
with the app's clientId/clientSecret and the subscriptions -> `{endpoint, ticket}`; connect to `endpoint?ticket=`;
every frame `{specVersion, type: SYSTEM|EVENT|CALLBACK, headers: {messageId, topic, ...}, data: "<json>"}` is
acknowledged with `{code: 200, headers: {messageId, contentType}, message: "OK", data}`; the SYSTEM topic
`disconnect` announces the server closing this connection (open a new one). The SDK itself opens connections with
blocking `requests` calls and `time.sleep`, so it cannot run on this process's IOLoop."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import yarl

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import OnInbound
from platform_server.features.channels.platforms.outbound import call_json
from platform_server.features.channels.platforms.settings import setting_of
from platform_server.integrations import net_guard
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel
    from platform_server.features.channels.platforms import dingtalk
else:
    aiohttp = lazy_import("aiohttp")
    dingtalk = lazy_import("platform_server.features.channels.platforms.dingtalk")

log = logging.getLogger(__name__)

BOT_MESSAGES = "/v1.0/im/bot/messages/get"  # the robot's message callback topic
DEFAULT_STREAM_BASE = "https://api.dingtalk.com"


async def _pinned(url: yarl.URL, allow_hosts: tuple[str, ...]) -> aiohttp.ClientSession:
    http = url.with_scheme({"wss": "https", "ws": "http"}.get(url.scheme, url.scheme))
    try:
        target = await net_guard.vet_url(http, allow_hosts)
    except net_guard.BlockedUrl as exc:
        raise ChannelError(f"DingTalk stream: {exc}")
    return aiohttp.ClientSession(connector=net_guard.pinned_connector(target), timeout=aiohttp.ClientTimeout(total=None, sock_connect=20))


async def run(allow_hosts: tuple[str, ...], channel: Channel, on_inbound: OnInbound) -> None:
    """One connection: returns when DingTalk announces a disconnect or closes it (the runtime opens the next one)."""
    app_key = setting_of(channel, "appKey")
    if not app_key:
        raise ChannelError("DingTalk stream: settings.appKey (the Client ID) is needed in Stream mode")
    base = yarl.URL((setting_of(channel, "streamBaseUrl") or DEFAULT_STREAM_BASE).rstrip("/"))
    async with await _pinned(base, allow_hosts) as api:
        body = {
            "clientId": app_key,
            "clientSecret": channel.secret,
            "subscriptions": [{"type": "CALLBACK", "topic": BOT_MESSAGES}],
            "ua": "platform_server",
        }
        status, opened = await call_json(api, "POST", str(base / "v1.0/gateway/connections/open"), json=body)
    if status != 200 or not isinstance(opened, dict) or not opened.get("endpoint") or not opened.get("ticket"):
        message = opened.get("message") if isinstance(opened, dict) else None
        raise ChannelError(f"DingTalk stream: opening a connection: HTTP {status}: {message or 'no endpoint'}")
    endpoint = yarl.URL(str(opened["endpoint"])).update_query({"ticket": str(opened["ticket"])})
    async with await _pinned(endpoint, allow_hosts) as session, session.ws_connect(endpoint, heartbeat=30) as ws:
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            frame: dict[str, Any] = json.loads(msg.data)
            headers = frame.get("headers") or {}
            await ws.send_json(
                {
                    "code": 200,
                    "headers": {"messageId": headers.get("messageId"), "contentType": "application/json"},
                    "message": "OK",
                    "data": frame.get("data") or "{}",
                }
            )
            if frame.get("type") == "SYSTEM" and headers.get("topic") == "disconnect":
                return
            if frame.get("type") == "CALLBACK" and headers.get("topic") == BOT_MESSAGES:
                try:
                    inbound = dingtalk.message_inbound(json.loads(frame.get("data") or "{}"))
                    if inbound is not None:
                        await on_inbound(inbound)
                except Exception:  # one bad message must not end the connection
                    log.exception("DingTalk stream message of channel %s could not be delivered", channel.id)
