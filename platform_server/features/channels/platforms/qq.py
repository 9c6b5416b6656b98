"""im_h QQ: the QQ Bot Open Platform's webhook (HTTP callback) mode and its v2 message API.

Follows the platform's webhook documentation: the signing key is an Ed25519 key whose 32-byte seed is the bot's
AppSecret repeated until it is long enough and then cut to 32 bytes; the callback-address validation (`op` 13)
is answered with `{plain_token, signature}`, the signature over `event_ts + plain_token`; every event carries
`X-Signature-Ed25519` (hex) over `X-Signature-Timestamp + body`, checked with the same key's public half; an event
(`op` 0) is acknowledged with `op` 12. C2C (`C2C_MESSAGE_CREATE`) and group @ (`GROUP_AT_MESSAGE_CREATE`)
messages are answered as passive replies (`msg_id` + `msg_seq`) with an access token from `getAppAccessToken`.

Not `qq-botpy`: it targets the WebSocket gateway, has no webhook receiver, and has had no release since 2024.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import Button, Handshake, Inbound, SentRef, SettingField, Target, base_url, split_text
from platform_server.features.channels.platforms.outbound import call_json
from platform_server.features.channels.platforms.settings import secret_of, setting_of
from platform_server.integrations import net_guard
from platform_server.lazy import lazy_import
from platform_server.web.errors import BadRequest, Unauthorized

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel
else:
    aiohttp = lazy_import("aiohttp")

PART_LIMIT = 2000
# What we sign for the validation request: the platform's tokens are short alphanumerics and its event_ts digits.
# Refusing anything else keeps the signing key from signing a string that could pass as `timestamp + JSON body`.
_PLAIN_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_MESSAGES = {"C2C_MESSAGE_CREATE": "c2c", "GROUP_AT_MESSAGE_CREATE": "group"}
_seq = itertools.count(1)  # msg_seq: unique per msg_id, so one counter for the process is enough


def seed_of(secret: str) -> bytes:
    """The documented seed: the AppSecret repeated until at least 32 bytes, the first 32 taken."""
    seed = secret.encode()
    if not seed:
        raise Unauthorized("QQ: no AppSecret is set")
    while len(seed) < 32:
        seed = seed * 2
    return seed[:32]


def sign_validation(secret: str, event_ts: str, plain_token: str) -> str:
    """The validation answer's signature: hex Ed25519 over `event_ts + plain_token`."""
    return Ed25519PrivateKey.from_private_bytes(seed_of(secret)).sign((event_ts + plain_token).encode()).hex()


def verify_signature(secret: str, timestamp: str, body: bytes, signature_hex: str) -> bool:
    try:
        signature = bytes.fromhex(signature_hex)
    except ValueError:
        return False
    if len(signature) != 64 or not timestamp:
        return False
    public = Ed25519PrivateKey.from_private_bytes(seed_of(secret)).public_key()
    try:
        public.verify(signature, timestamp.encode() + body)
        return True
    except InvalidSignature:
        return False


_LINK = re.compile(r"\[([^\]]+)\]\((\S+?)\)")
_FENCE = re.compile(r"^```[^\n]*\n?", re.M)
_EMPHASIS = re.compile(r"(\*\*|__|~~|`)")
_HEADING = re.compile(r"^#{1,6}\s+", re.M)
_BULLET = re.compile(r"^(\s*)[-*+]\s+", re.M)


def plain_text(markdown: str) -> str:
    """Plain text messages (`msg_type` 0) show Markdown marks literally: links become `text (url)`, list items
    bullets, code fences and emphasis marks drop."""
    text = _FENCE.sub("", _LINK.sub(r"\1 (\2)", markdown))
    return _EMPHASIS.sub("", _BULLET.sub(r"\1• ", _HEADING.sub("", text)))


def _body(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        raise BadRequest("QQ: the callback body is not JSON")
    if not isinstance(data, dict):
        raise BadRequest("QQ: the callback body is not a JSON object")
    return data


class QQAdapter:
    kind = "im_h"
    label = "QQ"
    default_base_url = "https://api.sgroup.qq.com"
    secret_label: str | None = None
    fields: tuple[SettingField, ...] = (
        SettingField("appId", "AppID"),
        SettingField("appSecret", "AppSecret", secret=True),
        SettingField(
            "authBaseUrl",
            "Access token API base URL",
            required=False,
            default="https://bots.qq.com",
            help="Only for a self-hosted gateway or a test server.",
        ),
    )
    help = (
        "On the QQ Bot open platform create a bot, then copy its AppID and AppSecret here. Under the callback settings "
        "choose the webhook mode, paste this channel's webhook URL as the callback address and subscribe to the "
        "single-chat and group @ message events; the platform checks the address with a signed validation request "
        "that this server answers. Add the users or groups that may talk to the bot in the sandbox while testing."
    )

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        if channel is None:
            raise Unauthorized("Invalid webhook signature")
        data = _body(body)
        appid = headers.get("X-Bot-Appid")
        if appid is not None and appid != setting_of(channel, "appId"):
            raise Unauthorized("QQ: the callback is for another bot")
        if data.get("op") == 13:
            # The validation request proves nothing by itself; its answer proves we hold the AppSecret. Only
            # well-formed tokens are signed (see _PLAIN_TOKEN).
            d = data.get("d") or {}
            if not _PLAIN_TOKEN.match(str(d.get("plain_token") or "")) or not str(d.get("event_ts") or "").isdigit():
                raise BadRequest("QQ: malformed validation request")
            return
        ok = verify_signature(secret_of(channel, "appSecret"), headers.get("X-Signature-Timestamp", ""), body, headers.get("X-Signature-Ed25519", ""))
        if not ok:
            raise Unauthorized("QQ: invalid X-Signature-Ed25519")

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | Handshake | None:
        data = _body(body)
        d = data.get("d") if isinstance(data.get("d"), dict) else {}
        assert isinstance(d, dict)
        if data.get("op") == 13:
            plain, ts = str(d["plain_token"]), str(d["event_ts"])
            return Handshake({"plain_token": plain, "signature": sign_validation(secret_of(channel, "appSecret"), ts, plain)})
        scene = _MESSAGES.get(str(data.get("t") or ""))
        if data.get("op") != 0:
            return None
        if scene is None:  # an event this bot does not act on (a friend added, a group joined...): acknowledged all the same
            return Handshake({"op": 12, "d": 0})
        author = d.get("author") or {}
        sender = str(author.get("user_openid") or author.get("member_openid") or "")
        where = sender if scene == "c2c" else str(d.get("group_openid") or "")
        if not sender or not where or not d.get("id"):
            raise BadRequest("QQ: message event without author, group or message id")
        text = str(d.get("content") or "").strip()
        for a in d.get("attachments") or []:
            if isinstance(a, dict):
                text += f"\n[attachment: {a.get('filename') or a.get('content_type') or 'file'}]"
        target = {"scene": scene, "openid": where, "msgId": str(d["id"])}
        # Every event is acknowledged with op 12, or the platform delivers it again.
        return Inbound(event_id=str(data.get("id") or d["id"]), sender_id=sender, text=text.strip(), target=target, ack=Handshake({"op": 12, "d": 0}))

    async def _token(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        """An AppAccessToken (`expires_in` seconds, sent as a string), fetched anew a minute before it ends."""
        auth = (setting_of(channel, "authBaseUrl") or "https://bots.qq.com").rstrip("/")
        app_id = setting_of(channel, "appId")
        cached = self._tokens.get((auth, app_id))
        if cached and cached[1] > time.monotonic():
            return cached[0]
        body = {"appId": app_id, "clientSecret": secret_of(channel, "appSecret")}
        url = f"{auth}/app/getAppAccessToken"
        if _origin(auth) == _origin(base_url(self, channel)):
            status, data = await call_json(session, "POST", url, json=body)
        else:  # its own host: vetted like any outbound URL, public addresses only
            try:
                target = await net_guard.vet_url(url)
            except net_guard.BlockedUrl as exc:
                raise ChannelError(f"authBaseUrl: {exc}")
            async with aiohttp.ClientSession(connector=net_guard.pinned_connector(target), timeout=aiohttp.ClientTimeout(total=20)) as own:
                status, data = await call_json(own, "POST", url, json=body)
        if status != 200 or not isinstance(data, dict) or not data.get("access_token"):
            raise ChannelError(f"QQ: no access token (HTTP {status}: {(data or {}).get('message') if isinstance(data, dict) else ''})")
        self._tokens[(auth, app_id)] = (str(data["access_token"]), time.monotonic() + max(int(data.get("expires_in") or 0) - 60, 30))
        return str(data["access_token"])

    async def probe(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        """Health: the AppID and AppSecret get an access token."""
        self._tokens.clear()
        await self._token(session, channel)
        return f"bot {setting_of(channel, 'appId')}: credentials accepted"

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        # Keyboards need Markdown messages, which a bot may send only once the platform granted it that permission:
        # an approval prompt says which text command decides instead.
        if buttons:
            text += "\n\nReply /approve or /deny."
        token = await self._token(session, channel)
        path = f"/v2/users/{target['openid']}/messages" if target.get("scene") == "c2c" else f"/v2/groups/{target['openid']}/messages"
        ids = []
        for part in split_text(plain_text(text), PART_LIMIT):
            body = {"content": part, "msg_type": 0, "msg_id": target.get("msgId"), "msg_seq": next(_seq)}
            status, data = await call_json(session, "POST", base_url(self, channel) + path, json=body, headers={"Authorization": f"QQBot {token}"})
            if status // 100 != 2 or not isinstance(data, dict):
                if status == 401:
                    self._tokens.clear()
                detail = data.get("message") if isinstance(data, dict) else ""
                raise ChannelError(f"QQ: message API refused (HTTP {status}: {detail})")
            ids.append(str(data.get("id") or ""))
        return SentRef(ids=ids, target=dict(target))


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}".lower()
