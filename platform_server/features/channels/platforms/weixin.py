"""im_g WeChat personal bot: the iLink bot protocol (QR-code login, long-poll `getupdates`, `sendmessage`).

Follows the protocol document published with Tencent's openclaw-weixin channel plugin (the same protocol the
original platform's Weixin channel implements): JSON over HTTPS against `https://ilinkai.weixin.qq.com`; a login
QR code from `get_bot_qrcode?bot_type=3`, polled with `get_qrcode_status` (wait, scaned, confirmed with a
`bot_token`, expired); authenticated POSTs carry `AuthorizationType: ilink_bot_token`, `Authorization: Bearer
<bot_token>`, a random `X-WECHAT-UIN` and `base_info`; `getupdates` is held by the server until messages arrive
and returns the cursor (`get_updates_buf`) for the next call; a reply passes back the inbound message's
`context_token`. There is no webhook: the channel's gateway is the long-poll loop.

No SDK: the plugin is TypeScript; the protocol is five JSON calls.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from platform_server import sealed
from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import (
    Button,
    Handshake,
    Inbound,
    OnInbound,
    SentRef,
    SettingField,
    Target,
    base_url,
    split_text,
)
from platform_server.features.channels.platforms.outbound import call_json
from platform_server.features.channels.platforms.qq import plain_text
from platform_server.features.channels.platforms.settings import secret_of
from platform_server.integrations import net_guard
from platform_server.lazy import lazy_import
from platform_server.web.errors import Forbidden

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel
else:
    aiohttp = lazy_import("aiohttp")

CHANNEL_VERSION = "1.0.2"  # sent as base_info.channel_version (the plugin's version it reports)
PART_LIMIT = 2000
LONG_POLL_S = 35.0  # the server's default hold (`longpolling_timeout_ms` 35000); the client waits a little longer
LOGIN_QR_TTL_S = 300  # the protocol gives no lifetime; the status poll reports `expired` before this anyway
_STATUS = {"wait": "waiting", "scaned": "scanned", "scaned_but_redirect": "scanned", "confirmed": "confirmed", "expired": "expired"}


def _headers(token: str | None) -> dict[str, str]:
    uin = base64.b64encode(str(secrets.randbits(32)).encode()).decode()  # base64 of a random uint32's decimal text
    headers = {"Content-Type": "application/json", "AuthorizationType": "ilink_bot_token", "X-WECHAT-UIN": uin, "iLink-App-Id": "bot"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def bot_token(channel: Channel) -> str:
    """The token of the QR login (sealed in the pairing credentials), or one pasted into the settings."""
    from platform_server.features.channels.service import CREDENTIALS_CONTEXT  # service imports this package

    creds = (channel.settings or {}).get("credentials")
    if isinstance(creds, dict) and isinstance(creds.get("token"), str):
        return sealed.unseal(creds["token"], CREDENTIALS_CONTEXT)
    return secret_of(channel, "botToken")


def message_text(msg: dict[str, Any]) -> str:
    """The items of a WeixinMessage as text: text items, voice transcripts, placeholders for media."""
    words = []
    for item in msg.get("item_list") or []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == 1:
            words.append(str((item.get("text_item") or {}).get("text") or ""))
        elif kind == 3:
            words.append(str((item.get("voice_item") or {}).get("text") or "[voice]"))
        elif kind == 2:
            words.append("[image]")
        elif kind == 4:
            words.append(f"[file: {(item.get('file_item') or {}).get('file_name') or 'unnamed'}]")
        elif kind == 5:
            words.append("[video]")
    return "\n".join(w for w in words if w).strip()


async def _session(allow_hosts: tuple[str, ...], url: str, total: float) -> aiohttp.ClientSession:
    try:
        target = await net_guard.vet_url(url, allow_hosts)
    except net_guard.BlockedUrl as exc:
        raise ChannelError(f"apiBaseUrl: {exc}")
    return aiohttp.ClientSession(connector=net_guard.pinned_connector(target), timeout=aiohttp.ClientTimeout(total=total))


class WeixinAdapter:
    kind = "im_g"
    label = "WeChat"
    default_base_url = "https://ilinkai.weixin.qq.com"
    secret_label: str | None = None
    fields: tuple[SettingField, ...] = (
        SettingField("botToken", "Bot token", secret=True, required=False, help="Filled in by the login QR code; paste one only if you have it."),
    )
    help = (
        "Save the channel, then open its login QR code and scan it with the WeChat app of the account that will be "
        "the bot, and confirm on the phone. The channel then receives that account's chats by long polling, so no "
        "webhook URL has to be pasted anywhere. Scan again when WeChat ends the session."
    )

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        raise Forbidden("WeChat: messages arrive through the channel's long-poll connection; this webhook takes none")

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | Handshake | None:
        return None

    async def probe(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        """Health: logged in (the long-poll gateway reports a session WeChat ended as the channel's last error)."""
        if not bot_token(channel):
            raise ChannelError("WeChat: not logged in (scan the login QR code)")
        creds = (channel.settings or {}).get("credentials") or {}
        return f"logged in as {creds.get('accountId') or 'a pasted bot token'}"

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        if buttons:  # personal chats have no buttons: the prompt names the text commands
            text += "\n\nReply /approve or /deny."
        token = bot_token(channel)
        if not token:
            raise ChannelError("WeChat: not logged in (scan the login QR code)")
        ids = []
        for part in split_text(plain_text(text), PART_LIMIT):
            client_id = "ps-" + secrets.token_hex(8)
            msg = {
                "from_user_id": "",
                "to_user_id": target["toUserId"],
                "client_id": client_id,
                "message_type": 2,  # bot
                "message_state": 2,  # finished
                "item_list": [{"type": 1, "text_item": {"text": part}}],
                "context_token": target.get("contextToken") or None,
            }
            body = {"msg": msg, "base_info": {"channel_version": CHANNEL_VERSION}}
            status, data = await call_json(session, "POST", base_url(self, channel) + "/ilink/bot/sendmessage", json=body, headers=_headers(token))
            if status != 200 or not isinstance(data, dict) or data.get("ret", 0) != 0 or data.get("errcode"):
                detail = f"ret {data.get('ret')} {data.get('errmsg') or ''}" if isinstance(data, dict) else f"HTTP {status}"
                raise ChannelError(f"WeChat: sendmessage refused ({detail})")
            ids.append(client_id)
        return SentRef(ids=ids, target=dict(target))

    async def run_gateway(self, allow_hosts: tuple[str, ...], channel: Channel, on_inbound: OnInbound) -> None:
        """The long poll: each answer's messages from users (message_type 1) go to `on_inbound`, its cursor to the
        next call; an application error (a session WeChat ended: errcode -14) ends the loop for the runtime's backoff."""
        token = bot_token(channel)
        if not token:
            raise ChannelError("WeChat: not logged in (scan the login QR code)")
        base = base_url(self, channel)
        cursor = ""
        async with await _session(allow_hosts, base, LONG_POLL_S + 10) as session:
            while True:
                body = {"get_updates_buf": cursor, "base_info": {"channel_version": CHANNEL_VERSION}}
                status, data = await call_json(session, "POST", base + "/ilink/bot/getupdates", json=body, headers=_headers(token))
                if status != 200 or not isinstance(data, dict):
                    raise ChannelError(f"WeChat: getupdates answered HTTP {status}")
                if data.get("errcode") or data.get("ret", 0) != 0:
                    raise ChannelError(f"WeChat: getupdates error {data.get('errcode') or data.get('ret')}: {data.get('errmsg') or ''}")
                for msg in data.get("msgs") or []:
                    inbound = _inbound(msg)
                    if inbound is not None:
                        await on_inbound(inbound)
                cursor = str(data.get("get_updates_buf") or cursor)

    # ---- QR-code login (the im_g login routes) -------------------------------------------------------------

    async def login_open(self, allow_hosts: tuple[str, ...], channel: Channel) -> dict[str, Any]:
        """A login QR code: `{sessionId, qrContent, expiresIn}` like the pairing gateway's answer."""
        base = base_url(self, channel)
        async with await _session(allow_hosts, base, 20) as session:
            status, data = await call_json(
                session, "POST", base + "/ilink/bot/get_bot_qrcode?bot_type=3", json={"local_token_list": []}, headers=_headers(None)
            )
        if status != 200 or not isinstance(data, dict) or not data.get("qrcode") or not data.get("qrcode_img_content"):
            raise ChannelError(f"WeChat: no login QR code (HTTP {status})")
        return {"sessionId": str(data["qrcode"]), "qrContent": str(data["qrcode_img_content"]), "expiresIn": LOGIN_QR_TTL_S}

    async def login_poll(self, allow_hosts: tuple[str, ...], channel: Channel, qrcode: str) -> dict[str, Any]:
        """`{status, error, credentials}` of the login, from `get_qrcode_status`."""
        base = base_url(self, channel)
        async with await _session(allow_hosts, base, 40) as session:
            status, data = await call_json(session, "GET", base + "/ilink/bot/get_qrcode_status", params={"qrcode": qrcode}, headers=_headers(None))
        if status != 200 or not isinstance(data, dict):
            raise ChannelError(f"WeChat: QR status answered HTTP {status}")
        state = str(data.get("status") or "")
        mapped = _STATUS.get(state)
        if mapped == "confirmed":
            if not data.get("bot_token"):
                return {"status": "failed", "error": "confirmed without a bot token", "credentials": None}
            return {"status": "confirmed", "error": None, "credentials": {"accountId": data.get("ilink_bot_id"), "token": data["bot_token"]}}
        if mapped is None:  # need_verifycode, verify_code_blocked, binded_redirect...: not completed by this login
            return {"status": "failed", "error": f"WeChat login stopped: {state or 'unknown status'}", "credentials": None}
        return {"status": mapped, "error": None, "credentials": None}


def _inbound(msg: Any) -> Inbound | None:
    if not isinstance(msg, dict) or msg.get("message_type") != 1:  # 1: from a user; 2: the bot's own
        return None
    sender = str(msg.get("from_user_id") or "")
    if not sender:
        return None
    event_id = str(msg.get("message_id") or msg.get("client_id") or f"{sender}:{msg.get('seq')}:{msg.get('create_time_ms')}")
    target = {"toUserId": sender, "contextToken": str(msg.get("context_token") or "")}
    if msg.get("group_id"):
        target["groupId"] = str(msg["group_id"])
    return Inbound(event_id=event_id, sender_id=sender, text=message_text(msg), target=target)
