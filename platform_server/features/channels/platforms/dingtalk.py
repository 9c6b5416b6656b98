"""im_a: DingTalk, an enterprise internal app's robot in HTTP callback mode; answers through the message's session
webhook as markdown. The HTTP API through aiohttp: the official `dingtalk-stream` SDK covers Stream mode only, and
opens its connection with blocking `requests` calls, which this process cannot run on its IOLoop."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yarl

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import (
    Button,
    Inbound,
    OnInbound,
    PlatformAdapter,
    SentRef,
    SettingField,
    Target,
    base_url,
    split_text,
)
from platform_server.features.channels.platforms.outbound import call_json
from platform_server.features.channels.platforms.settings import setting_of
from platform_server.lazy import lazy_import
from platform_server.web.errors import BadRequest, Unauthorized

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel
    from platform_server.features.channels.platforms import dingtalk_stream
else:
    dingtalk_stream = lazy_import("platform_server.features.channels.platforms.dingtalk_stream")

# "timestamp 与系统当前时间戳如果相差1小时以上，则认为是非法的请求" (more than an hour off: not from DingTalk).
MAX_SKEW_MS = 3600 * 1000
# A markdown message's text is cut well below the robot message size limit (20000 bytes; CJK text is 3 bytes a char).
MAX_TEXT = 4000


def sign(app_secret: str, timestamp: str) -> str:
    """ "header中的timestamp + "\\n" + 机器人的appSecret当做签名字符串，使用HmacSHA256算法计算签名，然后进行Base64 encode"."""
    mac = hmac.new(app_secret.encode(), f"{timestamp}\n{app_secret}".encode(), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


class DingTalk:
    kind = "im_a"
    label = "DingTalk"
    default_base_url = "https://oapi.dingtalk.com"
    secret_label = "AppSecret (Client Secret) of the robot's app"
    fields = (
        SettingField(
            "appKey",
            "AppKey (Client ID)",
            required=False,
            help="From the app's credentials page; Stream mode needs it (HTTP mode checks the secret only).",
        ),
        SettingField(
            "mode", "Receive mode", required=False, default="http", help="http: DingTalk calls the webhook URL; stream: this server connects out."
        ),
        SettingField("streamBaseUrl", "Stream API base URL", required=False, default="https://api.dingtalk.com", help="Stream mode only."),
    )
    help = (
        "In the DingTalk developer console create an enterprise internal app and add the robot capability. Copy the "
        "AppKey (Client ID) into AppKey and the AppSecret (Client Secret) into the channel secret. Choose HTTP mode for "
        "receiving messages and paste this channel's webhook URL (shown after saving) as the message receiving address, "
        "or choose Stream mode there and set Receive mode to stream here (no public address needed); then publish the "
        "robot. People talk to it in a direct chat or by mentioning it in a group; approvers (their staff ids in "
        "approverIds) answer an approval request by replying /approve or /deny."
    )

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        # "必须当timestamp和sign同时验证通过，才能认为是来自钉钉的合法请求" (both must pass).
        timestamp = headers.get("timestamp", "")
        if not timestamp.isdigit() or abs(time.time() * 1000 - int(timestamp)) > MAX_SKEW_MS:
            raise Unauthorized("Missing or stale DingTalk timestamp")
        expected = sign(channel.secret if channel is not None else "unknown-channel", timestamp)
        if not hmac.compare_digest(headers.get("sign", "").encode(), expected.encode()) or channel is None:
            raise Unauthorized("Invalid DingTalk signature")

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | None:
        try:
            message = json.loads(body)
        except ValueError:
            raise BadRequest("DingTalk message must be JSON")
        if not isinstance(message, dict) or not message.get("msgId"):
            raise BadRequest("msgId: required")
        return message_inbound(message)

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        if buttons:  # robot messages have link buttons only, no callbacks: approvers answer by text
            text += "\n\nReply **/approve** or **/deny**."
        hook = target.get("session_webhook", "")
        api = yarl.URL(base_url(self, channel))
        url = yarl.URL(hook) if hook else None
        # The session webhook comes in the message: it is only called on the channel's own (vetted) API host.
        if url is None or (url.scheme, url.host, url.port) != (api.scheme, api.host, api.port):
            raise ChannelError("DingTalk: the message's sessionWebhook is not on the channel's API host")
        if target.get("expires_ms", "").isdigit() and int(target["expires_ms"]) < time.time() * 1000:
            raise ChannelError("DingTalk: the conversation's session webhook expired before the answer was ready")
        ref = SentRef(target=target)
        for part in split_text(text, MAX_TEXT):
            title = part.strip().splitlines()[0].lstrip("#> ").strip()[:20] or "Answer"  # shown in notifications
            payload: dict[str, Any] = {"msgtype": "markdown", "markdown": {"title": title, "text": part}}
            if target.get("group") and target.get("sender_staff_id"):  # in a group the answer @mentions the asker
                payload["at"] = {"atUserIds": [target["sender_staff_id"]]}
            status, data = await call_json(session, "POST", str(url), json=payload)
            if status != 200 or not isinstance(data, dict) or data.get("errcode") != 0:
                errmsg = data.get("errmsg") if isinstance(data, dict) else None
                raise ChannelError(f"DingTalk sendBySession: HTTP {status}: {errmsg or 'error'}")
            ref.ids.append("")
        return ref

    async def run_gateway(self, allow_hosts: tuple[str, ...], channel: Channel, on_inbound: OnInbound) -> None:
        if setting_of(channel, "mode") != "stream":  # HTTP mode: nothing to keep open; cancelled when the channel changes
            await asyncio.Event().wait()
        await dingtalk_stream.run(allow_hosts, channel, on_inbound)


def message_inbound(message: dict[str, Any]) -> Inbound | None:
    """A robot message (HTTP callback body or Stream-mode data): text only; other msgtypes are described."""
    sender = str(message.get("senderStaffId") or message.get("senderId") or "")
    if not sender:
        return None
    kind = message.get("msgtype")
    if kind == "text":
        text = str((message.get("text") or {}).get("content") or "").strip()
    elif kind in ("picture", "file", "audio", "video", "richText"):
        text = f"[the user sent a {kind} message]"
    else:
        return None
    if not text:
        return None
    target: Target = {"session_webhook": str(message.get("sessionWebhook") or ""), "expires_ms": str(message.get("sessionWebhookExpiredTime") or "")}
    if str(message.get("conversationType")) == "2":
        target["group"] = "1"
        target["sender_staff_id"] = str(message.get("senderStaffId") or "")
    return Inbound(event_id=f"msg:{message['msgId']}", sender_id=sender, text=text[:20_000], target=target, sender_name=message.get("senderNick"))


ADAPTER: PlatformAdapter = DingTalk()
