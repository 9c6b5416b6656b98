"""im_b: Discord. Messages arrive through the gateway WebSocket (`discord_gateway`), slash commands and button presses
at the interactions endpoint (this webhook), answers go through the REST API (v10).

Discord publishes no official Python SDK (discord.py and its forks are community libraries with their own client
loop), so this is the documented HTTP and gateway API through aiohttp, and Ed25519 from `cryptography`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import (
    Button,
    Handshake,
    Inbound,
    OnInbound,
    PlatformAdapter,
    SentRef,
    SettingField,
    Target,
    base_url,
    parse_button,
    split_text,
)
from platform_server.features.channels.platforms.outbound import call_json
from platform_server.features.channels.platforms.settings import secret_of, setting_of
from platform_server.lazy import lazy_import
from platform_server.web.errors import BadRequest, Unauthorized

if TYPE_CHECKING:
    import aiohttp
    import cryptography.exceptions as crypto_errors
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from platform_server.features.channels.models import Channel
    from platform_server.features.channels.platforms import discord_gateway
else:
    ed25519 = lazy_import("cryptography.hazmat.primitives.asymmetric.ed25519")
    crypto_errors = lazy_import("cryptography.exceptions")
    discord_gateway = lazy_import("platform_server.features.channels.platforms.discord_gateway")

# Message `content`: "Message contents (up to 2000 characters)".
MAX_CONTENT = 2000
# Interaction types and callback types ("Receiving and Responding" to interactions).
PING, APPLICATION_COMMAND, MESSAGE_COMPONENT = 1, 2, 3
PONG, DEFERRED_CHANNEL_MESSAGE, DEFERRED_UPDATE_MESSAGE = 1, 5, 6
EPHEMERAL = 1 << 6
BUTTON_STYLES = {"primary": 1, "danger": 4}


def _hex(value: str) -> bytes | None:
    try:
        return bytes.fromhex(value)
    except ValueError:
        return None


def signature_valid(public_key_hex: str, headers: Mapping[str, str], body: bytes) -> bool:
    """ "Every Interaction is sent with the following headers: X-Signature-Ed25519 as a signature, X-Signature-Timestamp as
    a timestamp"; the signature is Ed25519 over timestamp + body with the application's public key ("If the signature
    fails validation, your app should respond with a 401 error code")."""
    key, signature = _hex(public_key_hex), _hex(headers.get("X-Signature-Ed25519", ""))
    timestamp = headers.get("X-Signature-Timestamp", "")
    if key is None or len(key) != 32 or signature is None or len(signature) != 64 or not timestamp:
        return False
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(key).verify(signature, timestamp.encode() + body)
    except crypto_errors.InvalidSignature:
        return False
    return True


class Discord:
    kind = "im_b"
    label = "Discord"
    default_base_url = "https://discord.com/api/v10"
    secret_label = None
    fields = (
        SettingField("applicationId", "Application ID"),
        SettingField("publicKey", "Public key", help="The application's Ed25519 public key (hex), from General Information."),
        SettingField("botToken", "Bot token", secret=True, help="From the Bot page of the application (Reset Token shows it once)."),
    )
    help = (
        "Create an application in Discord's developer portal. From General Information copy the application ID and the "
        "public key; on the Bot page create the bot, turn on the Message Content intent and copy its token. Invite the bot "
        "to your server with the bot and applications.commands scopes and the permissions Send Messages and Read Message "
        "History. Save the channel, then paste its webhook URL as the Interactions Endpoint URL (Discord checks it with a "
        "signed PING; the approval buttons and the /ask command this server registers for the application arrive there). "
        "Direct messages and messages that mention the bot arrive through the gateway connection this server keeps."
    )

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        key = setting_of(channel, "publicKey") if channel is not None else ""
        if not signature_valid(key, headers, body) or channel is None:
            raise Unauthorized("invalid request signature")

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | Handshake | None:
        try:
            interaction = json.loads(body)
        except ValueError:
            raise BadRequest("Interaction body must be JSON")
        if not isinstance(interaction, dict):
            raise BadRequest("Interaction body must be a JSON object")
        kind = interaction.get("type")
        if kind == PING:  # "acknowledge the PING ... by responding with a 200 and a type 1 (PONG) response"
            return Handshake({"type": PONG})
        user = (interaction.get("member") or {}).get("user") or interaction.get("user") or {}  # guild: member.user; DM: user
        if not isinstance(user, dict) or not user.get("id"):
            return None
        target: Target = {"application_id": str(interaction.get("application_id", "")), "interaction_token": str(interaction.get("token", ""))}
        data = interaction.get("data") or {}
        event_id = f"interaction:{interaction.get('id')}"
        if kind == MESSAGE_COMPONENT:
            decision = parse_button(str(data.get("custom_id") or ""))
            if decision is None:
                return None
            # The press is acknowledged at once ("DEFERRED_UPDATE_MESSAGE ... the user sees no loading state"); the
            # decision's answer is a follow-up message, so the prompt message itself is not overwritten.
            return Inbound(
                event_id=event_id,
                sender_id=str(user["id"]),
                text="",
                target={**target, "followup": "1"},
                command=decision[0],
                conversation_user=decision[1],
                ack=Handshake({"type": DEFERRED_UPDATE_MESSAGE}),
                button_ref=target,
            )
        if kind == APPLICATION_COMMAND:
            options = {o.get("name"): o.get("value") for o in data.get("options") or [] if isinstance(o, dict)}
            text = next((v for v in options.values() if isinstance(v, str) and v.strip()), "")
            if not text:
                return None
            # "Interaction tokens are valid for 15 minutes": the turn takes longer than the 3 s an initial response
            # may take, so the answer is deferred (type 5) and then edited into @original.
            return Inbound(
                event_id=event_id, sender_id=str(user["id"]), text=text[:20_000], target=target, ack=Handshake({"type": DEFERRED_CHANNEL_MESSAGE})
            )
        return None

    async def _call(self, session: aiohttp.ClientSession, channel: Channel, method: str, path: str, payload: dict[str, Any], bot: bool) -> Any:
        headers = {}
        if bot:  # interaction webhooks are authorised by their token in the path; the REST API by the bot token
            token = secret_of(channel, "botToken")
            if not token:
                raise ChannelError("Discord: the bot token is not set")
            headers["Authorization"] = f"Bot {token}"
        body = {"json": payload} if method != "GET" else {}
        status, data = await call_json(session, method, f"{base_url(self, channel)}{path}", headers=headers, **body)
        if not 200 <= status < 300:
            message = data.get("message") if isinstance(data, dict) else None
            raise ChannelError(f"Discord {method} {path.split('/')[1]}: HTTP {status}: {message or 'error'}")
        return data

    async def probe(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        # Get Current User: "Returns the user object of the requester's account" (the bot, with a bot token).
        me = await self._call(session, channel, "GET", "/users/@me", {}, bot=True)
        return f"bot {(me or {}).get('username', '?')}"

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        ref = SentRef(target=target)
        parts = split_text(text, MAX_CONTENT)  # Discord renders Markdown itself
        for i, part in enumerate(parts):
            payload: dict[str, Any] = {"content": part, "allowed_mentions": {"parse": []}}  # an answer pings nobody
            if buttons and i == len(parts) - 1:
                payload["components"] = components_of(buttons)
            if target.get("interaction_token"):
                hook = f"/webhooks/{target['application_id']}/{target['interaction_token']}"
                if not target.get("followup"):  # the deferred response becomes the first answer, once
                    data = await self._call(session, channel, "PATCH", f"{hook}/messages/@original", payload, bot=False)
                    target["followup"] = "1"  # the same turn's later answers are follow-up messages
                else:
                    data = await self._call(session, channel, "POST", hook, payload, bot=False)
            else:
                if i == 0 and target.get("message_id"):
                    payload["message_reference"] = {"message_id": target["message_id"], "fail_if_not_exists": False}
                data = await self._call(session, channel, "POST", f"/channels/{target['channel_id']}/messages", payload, bot=True)
            ref.ids.append(str((data or {}).get("id", "")))
        return ref

    async def edit(self, session: aiohttp.ClientSession, channel: Channel, ref: SentRef, text: str) -> SentRef:
        first, *rest = split_text(text, MAX_CONTENT)
        payload = {"content": first}
        if ref.target.get("interaction_token"):
            path = f"/webhooks/{ref.target['application_id']}/{ref.target['interaction_token']}/messages/{ref.ids[-1]}"
            await self._call(session, channel, "PATCH", path, payload, bot=False)
        else:
            await self._call(session, channel, "PATCH", f"/channels/{ref.target['channel_id']}/messages/{ref.ids[-1]}", payload, bot=True)
        if rest:
            return await self.send(
                session, channel, {**{k: v for k, v in ref.target.items() if k != "message_id"}, "followup": "1"}, "\n\n".join(rest)
            )
        return ref

    async def answer_button(self, session: aiohttp.ClientSession, channel: Channel, inbound: Inbound, note: str, decided: bool) -> None:
        hook = f"/webhooks/{inbound.button_ref['application_id']}/{inbound.button_ref['interaction_token']}"
        if decided:  # the prompt (the message the button is on: @original of a component interaction) loses its buttons
            await self._call(session, channel, "PATCH", f"{hook}/messages/@original", {"components": []}, bot=False)
        else:  # an ephemeral follow-up: "only visible to the user who invoked the Interaction"
            await self._call(session, channel, "POST", hook, {"content": note, "flags": EPHEMERAL}, bot=False)

    async def run_gateway(self, allow_hosts: tuple[str, ...], channel: Channel, on_inbound: OnInbound) -> None:
        await discord_gateway.run(self, allow_hosts, channel, on_inbound)


def components_of(buttons: list[Button]) -> list[dict[str, Any]]:
    """An action row (type 1) of buttons (type 2); a press sends the button's custom_id (at most 100 characters)."""
    row = [{"type": 2, "style": BUTTON_STYLES.get(b.style, 1), "label": b.label[:80], "custom_id": b.data[:100]} for b in buttons]
    return [{"type": 1, "components": row}]


_MENTION = re.compile(r"<@!?(\d+)>")


def message_inbound(message: dict[str, Any], bot_id: str) -> Inbound | None:
    """A gateway MESSAGE_CREATE as a message: DMs always, guild messages when they mention the bot; bots never."""
    author = message.get("author") or {}
    if not isinstance(author, dict) or not author.get("id") or author.get("bot") or author.get("id") == bot_id:
        return None
    content = message.get("content")
    if not isinstance(content, str):
        return None
    mentioned = any(isinstance(u, dict) and str(u.get("id")) == bot_id for u in message.get("mentions") or [])
    if message.get("guild_id") and not mentioned:
        return None
    text = _MENTION.sub(lambda m: "" if m.group(1) == bot_id else m.group(0), content).strip()
    if not text:
        return None
    target: Target = {"channel_id": str(message.get("channel_id", "")), "message_id": str(message.get("id", ""))}
    return Inbound(
        event_id=f"message:{message.get('id')}",
        sender_id=str(author["id"]),
        text=text[:20_000],
        target=target,
        sender_name=author.get("global_name") or author.get("username"),
    )


ADAPTER: PlatformAdapter = Discord()
