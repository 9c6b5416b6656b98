"""im_f WeCom smart bot (intelligent robot) in URL callback mode.

Follows WeCom's callback encryption scheme (the WXBizMsgCrypt sample library): `msg_signature` is the hex SHA-1 of
the sorted, concatenated Token, timestamp, nonce and encrypted text; messages are AES-256-CBC with the key
`base64(EncodingAESKey + "=")`, the IV its first 16 bytes, PKCS#7 padding to 32-byte blocks, and the plaintext
`random(16) + length(4, big-endian) + message + ReceiveId` (empty for an internal smart bot). The callback URL is
checked with a signed GET carrying `echostr`, answered with its decryption. A smart bot's callbacks are the JSON
`{"encrypt": ...}`; the decrypted message names its sender and a `response_url` through which the answer is posted
(Markdown, or a template card whose button presses come back as `template_card_event` callbacks). A response_url is
valid for an hour and answers once.

No SDK: WeCom publishes the crypto as sample code, not a package; the PyPI smart-bot SDKs drive the WebSocket
long-connection mode instead of the callbacks this route receives.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import struct
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import Button, Handshake, Inbound, SentRef, SettingField, Target, base_url, parse_button
from platform_server.features.channels.platforms.outbound import call_json
from platform_server.features.channels.platforms.settings import secret_of, setting_of
from platform_server.web.errors import BadRequest, Unauthorized

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel

# The answer to a callback this bot does not reply to passively: empty (WeCom reads a non-empty body as a reply).
_NOTHING = Handshake("", content_type="text/plain")
MARKDOWN_MAX_BYTES = 20480  # the markdown message's content limit
RESPONSE_URL_TTL = 3600.0


def msg_signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypted])).encode()).hexdigest()


def _key(encoding_aes_key: str) -> bytes:
    try:
        key = base64.b64decode(encoding_aes_key + "=", validate=True)
    except ValueError:
        key = b""
    if len(encoding_aes_key) != 43 or len(key) != 32:
        raise Unauthorized("WeCom: the EncodingAESKey must be 43 characters of base64")
    return key


def decrypt(encoding_aes_key: str, encrypted: str) -> tuple[bytes, str]:
    """(message, ReceiveId) of an encrypted text."""
    key = _key(encoding_aes_key)
    try:
        raw = base64.b64decode(encrypted, validate=True)
    except ValueError:
        raise Unauthorized("WeCom: the encrypted text is not base64")
    if not raw or len(raw) % 16:
        raise Unauthorized("WeCom: the encrypted text has a wrong length")
    decryptor = Cipher(algorithms.AES(key), modes.CBC(key[:16])).decryptor()
    plain = decryptor.update(raw) + decryptor.finalize()
    pad = plain[-1]
    if not 1 <= pad <= 32 or len(plain) < 20 + pad:
        raise Unauthorized("WeCom: the text does not decrypt with this EncodingAESKey")
    plain = plain[:-pad]
    (length,) = struct.unpack(">I", plain[16:20])
    if 20 + length > len(plain):
        raise Unauthorized("WeCom: the text does not decrypt with this EncodingAESKey")
    return plain[20 : 20 + length], plain[20 + length :].decode(errors="replace")


def encrypt(encoding_aes_key: str, message: bytes, receive_id: str = "") -> str:
    """The inverse of `decrypt` (the platform's side; the tests' local WeCom uses it)."""
    key = _key(encoding_aes_key)
    plain = os.urandom(16) + struct.pack(">I", len(message)) + message + receive_id.encode()
    pad = 32 - len(plain) % 32
    encryptor = Cipher(algorithms.AES(key), modes.CBC(key[:16])).encryptor()
    return base64.b64encode(encryptor.update(plain + bytes([pad]) * pad) + encryptor.finalize()).decode()


def _encrypted_of(body: bytes, query: Mapping[str, str]) -> str:
    if "echostr" in query and not body:
        return query["echostr"]
    try:
        data = json.loads(body)
    except ValueError:
        raise BadRequest("WeCom: the callback body is not JSON")
    if not isinstance(data, dict) or not isinstance(data.get("encrypt"), str):
        raise BadRequest("WeCom: the callback body has no `encrypt`")
    return str(data["encrypt"])


def _truncate(text: str) -> str:
    raw = text.encode()
    if len(raw) <= MARKDOWN_MAX_BYTES:
        return text
    return raw[: MARKDOWN_MAX_BYTES - 3].decode(errors="ignore") + "…"


class WeComAdapter:
    kind = "im_f"
    label = "WeCom"
    default_base_url = "https://qyapi.weixin.qq.com"
    secret_label: str | None = None
    fields: tuple[SettingField, ...] = (
        SettingField("token", "Token", secret=True),
        SettingField("encodingAESKey", "EncodingAESKey", secret=True),
        SettingField("botId", "Bot ID", required=False, help="When set, callbacks for another bot are ignored."),
    )
    # the document's form of check_settings (channels.schemas): the key as WeCom shows it, no spaces around
    settings_schemas: dict[str, dict[str, Any]] = {"encodingAESKey": {"pattern": "^[A-Za-z0-9+/]{43}$"}}
    help = (
        "In the WeCom admin console create a smart bot (intelligent robot) and choose the API mode with a callback "
        "URL. Paste this channel's webhook URL as the URL, let WeCom generate the Token and the EncodingAESKey and "
        "copy both here before you save there: WeCom checks the URL with a signed request that this server answers. "
        "Users then talk to the bot in a single chat or mention it in a group."
    )

    def __init__(self) -> None:
        self._answered: dict[str, float] = {}  # response_url -> when it was used (each answers once)

    def check_settings(self, given: dict[str, Any]) -> None:
        """The EncodingAESKey WeCom generates is 43 characters of base64 (32 bytes with the "=" added)."""
        key = given.get("encodingAESKey")
        if key is not None:
            try:
                _key(key if isinstance(key, str) else "")
            except Unauthorized:
                raise BadRequest("settings.encodingAESKey: must be the 43-character key WeCom generated")

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        if channel is None:
            raise Unauthorized("Invalid webhook signature")
        encrypted = _encrypted_of(body, query)
        token = secret_of(channel, "token")
        expected = msg_signature(token, query.get("timestamp", ""), query.get("nonce", ""), encrypted)
        if not token or not hmac.compare_digest(query.get("msg_signature", ""), expected):
            raise Unauthorized("WeCom: invalid msg_signature")
        _, receive_id = decrypt(secret_of(channel, "encodingAESKey"), encrypted)
        if receive_id:  # an internal smart bot's ReceiveId is empty: anything else was encrypted for someone else
            raise Unauthorized("WeCom: the message is for another receiver")

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | Handshake | None:
        plain, _ = decrypt(secret_of(channel, "encodingAESKey"), _encrypted_of(body, query))
        if "echostr" in query and not body:
            return Handshake(plain, content_type="text/plain")
        try:
            msg = json.loads(plain)
        except ValueError:
            raise BadRequest("WeCom: the decrypted callback is not JSON")
        bot = setting_of(channel, "botId")
        if not isinstance(msg, dict) or (bot and msg.get("aibotid") != bot):
            return _NOTHING
        ack = _NOTHING  # no passive reply: the answer goes through response_url
        sender = str((msg.get("from") or {}).get("userid") or "")
        target = {"responseUrl": str(msg.get("response_url") or ""), "chatId": str(msg.get("chatid") or "")}
        if not sender or not target["responseUrl"]:
            return _NOTHING
        event_id = str(msg.get("msgid") or "")
        kind = msg.get("msgtype")
        if kind == "event":
            event = msg.get("event") or {}
            card = event.get("template_card_event") or {}
            parsed = parse_button(str(card.get("event_key") or "")) if event.get("eventtype") == "template_card_event" else None
            if parsed is None:
                return _NOTHING
            decision, user = parsed
            text = "/approve" if decision == "approved" else "/deny"
            return Inbound(event_id=event_id, sender_id=sender, text=text, target=target, command=decision, conversation_user=user, ack=ack)
        if kind == "text":
            text = str((msg.get("text") or {}).get("content") or "")
        elif kind == "mixed":
            items = (msg.get("mixed") or {}).get("msg_item") or []
            text = " ".join(str((i.get("text") or {}).get("content") or "[image]") for i in items if isinstance(i, dict))
        elif kind in ("image", "file", "voice"):
            text = str((msg.get("voice") or {}).get("content") or f"[{kind}]")  # a voice message arrives transcribed
        else:
            return _NOTHING
        if msg.get("chattype") == "group":  # the bot is mentioned by name in the text: "@Bot question"
            text = text.split(" ", 1)[1] if text.startswith("@") and " " in text else text
        return Inbound(event_id=event_id, sender_id=sender, text=text.strip(), target=target, ack=ack)

    async def probe(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        """Health: a smart bot has no credential-check API; the keys are well-formed (WeCom checks them with the
        signed URL check when the callback URL is saved there)."""
        try:
            _key(secret_of(channel, "encodingAESKey"))
        except Unauthorized as exc:
            raise ChannelError(exc.msg)
        if not secret_of(channel, "token"):
            raise ChannelError("WeCom: no Token is set")
        return "callback keys set"

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        url = target.get("responseUrl", "")
        base = base_url(self, channel)
        if not url.startswith(base + "/"):  # the platform's own host only (the session reaches nothing else)
            raise ChannelError("WeCom: the response_url is not on the API host")
        now = time.monotonic()
        self._answered = {u: t for u, t in self._answered.items() if now - t < RESPONSE_URL_TTL}
        if url in self._answered:
            # It answers once: the approval card went out already and holds the prompt; later parts of the same
            # turn cannot be delivered (the press of a button brings a fresh response_url).
            return SentRef(target=dict(target))
        self._answered[url] = now
        if buttons:
            body: dict[str, Any] = {"msgtype": "template_card", "template_card": _card(text, buttons)}
        else:
            body = {"msgtype": "markdown", "markdown": {"content": _truncate(text)}}
        status, data = await call_json(session, "POST", url, json=body)
        if status != 200 or not isinstance(data, dict) or data.get("errcode") != 0:
            detail = f"{data.get('errcode')} {data.get('errmsg')}" if isinstance(data, dict) else f"HTTP {status}"
            raise ChannelError(f"WeCom: response_url refused ({detail})")
        return SentRef(target=dict(target))


def _card(text: str, buttons: list[Button]) -> dict[str, Any]:
    """A `button_interaction` template card: a press comes back as a `template_card_event` with the button's key."""
    return {
        "card_type": "button_interaction",
        "main_title": {"title": "Approval needed"},
        "sub_title_text": text[:1000],
        "button_list": [{"text": b.label, "style": 2 if b.style == "danger" else 1, "key": b.data} for b in buttons],
        "task_id": "approval_" + secrets.token_hex(8),
    }
