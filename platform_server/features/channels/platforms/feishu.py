"""im_c Feishu / Lark: event subscription over HTTP (the "send events to the developer's server" mode).

Follows the Open Platform's event subscription guide: the `url_verification` challenge, the Verification Token
carried in every event, the Encrypt Key (AES-256-CBC, key = SHA-256 of the Encrypt Key, the IV is the first 16 bytes
of the base64-decoded `encrypt`), the `X-Lark-Signature` check, `im.message.receive_v1` and `card.action.trigger`
payloads; outbound through the IM v1 message API with a `tenant_access_token`. Answers are sent whole rather than
streamed by edits: the platform caps how many times one message may be edited.

Not the `lark-oapi` SDK: its HTTP client is synchronous (`requests`), its event dispatcher wants a framework
adapter (Flask), and the part this process needs (decrypt, one signature, three JSON calls) is smaller than the
glue it would take to run the SDK off the IOLoop.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import (
    Button,
    Handshake,
    Inbound,
    SentRef,
    SettingField,
    Target,
    base_url,
    parse_button,
    split_text,
)
from platform_server.features.channels.platforms.settings import secret_of, setting_of
from platform_server.web.errors import BadRequest, Unauthorized

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel

# A `post` message body may be 30 KB; CJK text is 3 bytes a character in UTF-8, so 9000 characters stay under it.
PART_LIMIT = 9000


def decrypt(encrypt_key: str, encrypted: str) -> bytes:
    """The guide's "decrypt" step: SHA-256 of the Encrypt Key is the AES-256 key; the first 16 bytes of the
    base64-decoded data are the IV of the CBC-mode rest, PKCS#7-padded."""
    try:
        raw = base64.b64decode(encrypted, validate=True)
    except ValueError:
        raise Unauthorized("Feishu: the encrypted event is not base64")
    if len(raw) < 32 or len(raw) % 16:
        raise Unauthorized("Feishu: the encrypted event has a wrong length")
    key = hashlib.sha256(encrypt_key.encode()).digest()
    decryptor = Cipher(algorithms.AES(key), modes.CBC(raw[:16])).decryptor()
    plain = decryptor.update(raw[16:]) + decryptor.finalize()
    pad = plain[-1]
    if not 1 <= pad <= 16 or plain[-pad:] != bytes([pad]) * pad:
        raise Unauthorized("Feishu: the event does not decrypt with this Encrypt Key")
    return plain[:-pad]


def encrypt(encrypt_key: str, plain: bytes, iv: bytes) -> str:
    """The inverse of `decrypt` (what the platform does; the tests' local platform uses it)."""
    pad = 16 - len(plain) % 16
    key = hashlib.sha256(encrypt_key.encode()).digest()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return base64.b64encode(iv + encryptor.update(plain + bytes([pad]) * pad) + encryptor.finalize()).decode()


def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    """The guide's signature: hex SHA-256 of `X-Lark-Request-Timestamp + X-Lark-Request-Nonce + encrypt_key`
    (UTF-8) followed by the raw request body."""
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


def _payload(channel: Channel, body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        raise BadRequest("Feishu: the event body is not JSON")
    if not isinstance(data, dict):
        raise BadRequest("Feishu: the event body is not a JSON object")
    if "encrypt" in data:
        key = secret_of(channel, "encryptKey")
        if not key:  # an encrypted event for a channel without an Encrypt Key cannot be the platform's
            raise Unauthorized("Feishu: encrypted event but no Encrypt Key is set")
        try:
            data = json.loads(decrypt(key, str(data["encrypt"])))
        except ValueError:
            raise Unauthorized("Feishu: the decrypted event is not JSON")
        if not isinstance(data, dict):
            raise Unauthorized("Feishu: the decrypted event is not a JSON object")
    return data


def _token_of(payload: dict[str, Any]) -> str:
    """Schema 2.0 events carry the Verification Token in `header.token`; the challenge and 1.0 events at the top."""
    header = payload.get("header")
    if isinstance(header, dict) and "token" in header:
        return str(header["token"])
    return str(payload.get("token") or "")


def _mention_text(text: str, mentions: list[Any]) -> str:
    """`@_user_1` placeholders: a leading one (the bot, in a group) is dropped, the others read `@Name`."""
    for m in mentions or []:
        if isinstance(m, dict) and m.get("key"):
            key, name = str(m["key"]), str(m.get("name") or "")
            if text.lstrip().startswith(key):
                text = text.lstrip()[len(key) :]
            text = text.replace(key, f"@{name}")
    return text.strip()


def _post_text(content: dict[str, Any]) -> str:
    """A rich-text (`post`) message as plain text: paragraphs of text, link, @ and image elements."""
    body = content if "content" in content else next((v for v in content.values() if isinstance(v, dict)), {})
    lines = [str(body.get("title") or "")] if body.get("title") else []
    for paragraph in body.get("content") or []:
        words = []
        for el in paragraph if isinstance(paragraph, list) else []:
            tag = el.get("tag") if isinstance(el, dict) else None
            if tag in ("text", "a", "md"):
                words.append(str(el.get("text") or ""))
            elif tag == "at":
                words.append(f"@{el.get('user_name') or el.get('user_id') or ''}")
            elif tag in ("img", "media"):
                words.append("[image]")
            elif tag == "code_block":
                words.append(str(el.get("text") or ""))
        lines.append("".join(words))
    return "\n".join(lines).strip()


def message_text(message: dict[str, Any]) -> str:
    """The text of an `im.message.receive_v1` message (`content` is a JSON string per `message_type`)."""
    try:
        content = json.loads(message.get("content") or "{}")
    except ValueError:
        content = {}
    kind = message.get("message_type")
    mentions = message.get("mentions") or []
    if kind == "text":
        return _mention_text(str(content.get("text") or ""), mentions)
    if kind == "post":
        return _mention_text(_post_text(content), mentions)
    if kind == "image":
        return "[image]"
    if kind == "file":
        return f"[file: {content.get('file_name') or 'unnamed'}]"
    return f"[{kind} message]"


_HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.M)


def to_post_markdown(text: str) -> str:
    """The `md` element of a `post` renders bold, italics, links, lists, quotes and code, not headings: a heading
    becomes a bold line."""
    return _HEADING.sub(r"**\1**", text)


class FeishuAdapter:
    kind = "im_c"
    label = "Feishu / Lark"
    default_base_url = "https://open.feishu.cn"
    secret_label: str | None = None
    fields: tuple[SettingField, ...] = (
        SettingField("appId", "App ID"),
        SettingField("appSecret", "App Secret", secret=True),
        SettingField("verificationToken", "Verification Token", secret=True),
        SettingField("encryptKey", "Encrypt Key", secret=True, required=False, help="Set it to have events encrypted and signed."),
    )
    help = (
        "In the Feishu (or Lark) developer console create a custom app and add the Bot capability. Copy its App ID "
        "and App Secret here. Under Events and callbacks choose to send events to the developer's server, paste this "
        "channel's webhook URL as the request URL for both events and callbacks, copy the Verification Token and "
        "(recommended) the Encrypt Key here, and subscribe to the receive-message event. Grant the app the "
        "permissions to read messages sent to the bot and to send messages, then publish a version. For Lark set the "
        "API base URL to the Lark open API host."
    )

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}  # (base, app id) -> tenant_access_token, expiry

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        if channel is None:
            raise Unauthorized("Invalid webhook signature")
        payload = _payload(channel, body)
        encrypt_key = secret_of(channel, "encryptKey")
        # The signature check applies to every event but the request URL challenge, which the guide leaves unsigned
        # (it still has to decrypt with the Encrypt Key and carry the Verification Token).
        if encrypt_key and payload.get("type") != "url_verification":
            ts, nonce = headers.get("X-Lark-Request-Timestamp", ""), headers.get("X-Lark-Request-Nonce", "")
            given = headers.get("X-Lark-Signature", "")
            if not ts or not hmac.compare_digest(given, signature(ts, nonce, encrypt_key, body)):
                raise Unauthorized("Feishu: invalid X-Lark-Signature")
        expected = secret_of(channel, "verificationToken")
        if not expected or not hmac.compare_digest(_token_of(payload), expected):
            raise Unauthorized("Feishu: wrong Verification Token")

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | Handshake | None:
        payload = _payload(channel, body)
        if payload.get("type") == "url_verification":
            return Handshake({"challenge": payload.get("challenge")})
        header: dict[str, Any] = payload["header"] if isinstance(payload.get("header"), dict) else {}
        event: dict[str, Any] = payload["event"] if isinstance(payload.get("event"), dict) else {}
        kind = header.get("event_type")
        event_id = str(header.get("event_id") or "")
        if kind == "im.message.receive_v1":
            sender, message = event.get("sender") or {}, event.get("message") or {}
            if sender.get("sender_type") != "user":  # the bot's own and other apps' messages
                return None
            open_id = str((sender.get("sender_id") or {}).get("open_id") or "")
            if not open_id or not message.get("message_id"):
                raise BadRequest("Feishu: message event without sender or message id")
            target = {
                "chatId": str(message.get("chat_id") or ""),
                "messageId": str(message["message_id"]),
                "chatType": str(message.get("chat_type") or ""),
            }
            return Inbound(event_id=event_id or str(message["message_id"]), sender_id=open_id, text=message_text(message), target=target)
        if kind == "card.action.trigger":
            return self._button(event, event_id)
        return None

    def _button(self, event: dict[str, Any], event_id: str) -> Inbound | None:
        value = (event.get("action") or {}).get("value") or {}
        parsed = parse_button(str(value.get("data") or "")) if isinstance(value, dict) else None
        if parsed is None:
            return None
        decision, user = parsed
        context = event.get("context") or {}
        operator = str((event.get("operator") or {}).get("open_id") or "")
        target = {"chatId": str(context.get("open_chat_id") or ""), "messageId": str(context.get("open_message_id") or "")}
        # The callback must be answered within 3 seconds: a toast now, the decision's outcome as a message later.
        ack = Handshake({"toast": {"type": "info", "content": "Received"}})
        return Inbound(
            event_id=event_id,
            sender_id=operator,
            text="/approve" if decision == "approved" else "/deny",
            target=target,
            command=decision,
            conversation_user=user,
            ack=ack,
        )

    async def _token(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        """A `tenant_access_token` of a custom app, kept until shortly before its `expire` seconds run out."""
        base, app_id = base_url(self, channel), setting_of(channel, "appId")
        cached = self._tokens.get((base, app_id))
        if cached and cached[1] > time.monotonic():
            return cached[0]
        body = {"app_id": app_id, "app_secret": secret_of(channel, "appSecret")}
        async with session.post(f"{base}/open-apis/auth/v3/tenant_access_token/internal", json=body) as r:
            data = await r.json(content_type=None)
        if not isinstance(data, dict) or data.get("code") != 0 or not data.get("tenant_access_token"):
            raise ChannelError(f"Feishu: no tenant_access_token ({_error(data)})")
        self._tokens[(base, app_id)] = (str(data["tenant_access_token"]), time.monotonic() + max(int(data.get("expire") or 0) - 300, 60))
        return str(data["tenant_access_token"])

    async def _call(self, session: aiohttp.ClientSession, channel: Channel, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        token = await self._token(session, channel)
        url = f"{base_url(self, channel)}{path}"
        async with session.request(method, url, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
            data = await r.json(content_type=None)
        if not isinstance(data, dict) or data.get("code") != 0:
            if isinstance(data, dict) and data.get("code") in (99991663, 99991668):  # token invalid or expired: fetch anew next time
                self._tokens.pop((base_url(self, channel), setting_of(channel, "appId")), None)
            raise ChannelError(f"Feishu: message API refused ({_error(data)})")
        return data

    async def probe(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        """Health: the app credentials get a tenant_access_token."""
        self._tokens.pop((base_url(self, channel), setting_of(channel, "appId")), None)
        await self._token(session, channel)
        return f"app {setting_of(channel, 'appId')}: credentials accepted"

    async def answer_button(self, session: aiohttp.ClientSession, channel: Channel, inbound: Inbound, note: str, decided: bool) -> None:
        """A decided prompt's card is updated in place (the message-card PATCH): its buttons give way to the outcome,
        so nobody presses them again; a refused press leaves them for an approver."""
        message_id = inbound.target.get("messageId")
        if not decided or not message_id:
            return
        card = {"config": {"wide_screen_mode": True, "update_multi": True}, "elements": [{"tag": "markdown", "content": note}]}
        await self._call(session, channel, "PATCH", f"/open-apis/im/v1/messages/{message_id}", {"content": json.dumps(card, ensure_ascii=False)})

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        parts = split_text(to_post_markdown(text), PART_LIMIT)
        ids: list[str] = []
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if buttons and last:
                msg_type, content = "interactive", _card(part, buttons)
            else:
                msg_type, content = "post", {"zh_cn": {"content": [[{"tag": "md", "text": part}]]}}
            body = {"msg_type": msg_type, "content": json.dumps(content, ensure_ascii=False)}
            if target.get("messageId"):  # a reply quotes the user's message, in its thread when it had one
                data = await self._call(session, channel, "POST", f"/open-apis/im/v1/messages/{target['messageId']}/reply", body)
            else:
                data = await self._call(
                    session, channel, "POST", "/open-apis/im/v1/messages?receive_id_type=chat_id", {**body, "receive_id": target["chatId"]}
                )
            ids.append(str((data.get("data") or {}).get("message_id") or ""))
        return SentRef(ids=ids, target=dict(target))


def _card(text: str, buttons: list[Button]) -> dict[str, Any]:
    """A message card: the text as a markdown element and one button per choice; a press comes back as a
    `card.action.trigger` callback carrying the button's `value`."""
    actions = [
        {
            "tag": "button",
            "text": {"tag": "plain_text", "content": b.label},
            "type": "danger" if b.style == "danger" else "primary",
            "value": {"data": b.data},
        }
        for b in buttons
    ]
    return {"config": {"wide_screen_mode": True}, "elements": [{"tag": "markdown", "content": text}, {"tag": "action", "actions": actions}]}


def _error(data: Any) -> str:
    if isinstance(data, dict):
        return f"code {data.get('code')}: {data.get('msg')}"
    return "not a JSON answer"
