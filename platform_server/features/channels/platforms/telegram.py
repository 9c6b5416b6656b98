"""im_e: Telegram, through the Bot API (there is no official Python SDK; the documented HTTP API through aiohttp).

Inbound: the webhook set by `setWebhook` with `secret_token`; outbound: `sendMessage` / `editMessageText` with
`parse_mode=HTML`; approvals as an inline keyboard whose presses arrive as `callback_query` updates."""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import (
    Button,
    Inbound,
    PlatformAdapter,
    SentRef,
    SettingField,
    Target,
    base_url,
    parse_button,
    split_text,
)
from platform_server.features.channels.platforms.markup import telegram_html
from platform_server.features.channels.platforms.outbound import call_json
from platform_server.features.channels.platforms.settings import secret_of
from platform_server.web.errors import BadRequest, Unauthorized

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# sendMessage `text`: "Text of the message to be sent, 1-4096 characters after entities parsing".
MAX_TEXT = 4096
_UNKNOWN = secrets.token_urlsafe(32)  # compared against for an unknown channel, so it fails the same way


class Telegram:
    kind = "im_e"
    label = "Telegram"
    default_base_url = "https://api.telegram.org"
    secret_label = "Webhook secret token (the secret_token given to setWebhook)"
    fields = (SettingField("botToken", "Bot token", secret=True, help="The token the bot father gave when the bot was created."),)
    help = (
        "In Telegram, open a chat with the official bot father account and send /newbot; choose a name and a user name "
        "and copy the bot token it answers with into Bot token. Save the channel, then register this server's webhook "
        "URL (shown after saving) with the Bot API method setWebhook, passing the channel secret as secret_token. In "
        "groups the bot sees messages that mention it, or all messages when its privacy mode is turned off."
    )

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        # setWebhook: "If you'd like to make sure that the webhook was set by you, you can specify secret data in the
        # parameter secret_token. If specified, the request will contain a header "X-Telegram-Bot-Api-Secret-Token"
        # with the secret token as content." Telegram does not sign the body: the header is the whole check.
        given = headers.get(SECRET_HEADER, "")
        expected = channel.secret if channel is not None else _UNKNOWN
        if not given or not hmac.compare_digest(given.encode(), expected.encode()) or channel is None:
            raise Unauthorized("Invalid Telegram secret token")

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | None:
        try:
            update = json.loads(body)
        except ValueError:
            raise BadRequest("Webhook body must be a Telegram Update (JSON)")
        if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
            raise BadRequest("update_id: required")
        # Update.update_id: "This identifier becomes especially handy if you're using webhooks, since it allows you to
        # ignore repeated updates" (Telegram repeats a delivery that did not get a 2XY answer).
        event_id = f"update:{update['update_id']}"
        if isinstance(update.get("callback_query"), dict):
            return self._button(event_id, update["callback_query"])
        message = update.get("message")
        if not isinstance(message, dict):
            return None  # edited messages, channel posts, member updates...: not a message to answer
        sender, chat = message.get("from") or {}, message.get("chat") or {}
        if not isinstance(sender, dict) or "id" not in sender or not isinstance(chat, dict) or "id" not in chat or sender.get("is_bot"):
            return None
        text = self._text(message)
        if not text:
            return None
        target: Target = {"chat_id": str(chat["id"]), "reply_to": str(message.get("message_id", ""))}
        if message.get("is_topic_message") and message.get("message_thread_id"):
            target["message_thread_id"] = str(message["message_thread_id"])
        name = " ".join(str(sender.get(k) or "") for k in ("first_name", "last_name")).strip() or sender.get("username")
        return Inbound(event_id=event_id, sender_id=str(sender["id"]), text=text, target=target, sender_name=name)

    @staticmethod
    def _text(message: dict[str, Any]) -> str:
        """The text, or a photo's or document's caption; a leading @mention of the bot (groups) is dropped."""
        text = message.get("text") or message.get("caption") or ""
        if not isinstance(text, str):
            return ""
        entities = message.get("entities") or message.get("caption_entities") or []
        first = entities[0] if entities and isinstance(entities[0], dict) else {}
        if first.get("type") == "mention" and first.get("offset") == 0:
            text = text[int(first.get("length") or 0) :]
        if not text.strip():
            if message.get("photo"):
                return "[the user sent a photo without a caption]"
            if isinstance(message.get("document"), dict):
                return f"[the user sent a file: {message['document'].get('file_name') or 'unnamed'}]"
        return text.strip()[:20_000]

    @staticmethod
    def _button(event_id: str, query: dict[str, Any]) -> Inbound | None:
        decision = parse_button(str(query.get("data") or ""))
        sender, message = query.get("from") or {}, query.get("message") or {}
        if decision is None or not isinstance(sender, dict) or "id" not in sender or not isinstance(message, dict):
            return None
        chat_id = str((message.get("chat") or {}).get("id", ""))
        return Inbound(
            event_id=event_id,
            sender_id=str(sender["id"]),
            text="",
            target={"chat_id": chat_id},
            command=decision[0],
            conversation_user=decision[1],
            button_ref={"callback_query_id": str(query.get("id", "")), "chat_id": chat_id, "message_id": str(message.get("message_id", ""))},
        )

    async def _call(self, session: aiohttp.ClientSession, channel: Channel, method: str, payload: dict[str, Any]) -> Any:
        # "All queries to the Telegram Bot API must be served over HTTPS ... https://api.telegram.org/bot<token>/METHOD_NAME";
        # the answer is {"ok": true, "result": ...} or {"ok": false, "description": ...}.
        token = secret_of(channel, "botToken")
        if not token:
            raise ChannelError("Telegram: the bot token is not set")
        status, data = await call_json(session, "POST", f"{base_url(self, channel)}/bot{token}/{method}", json=payload)
        if not isinstance(data, dict) or data.get("ok") is not True:
            description = data.get("description") if isinstance(data, dict) else None
            raise ChannelError(f"Telegram {method}: HTTP {status}: {description or 'no answer'}")
        return data.get("result")

    async def probe(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        # getMe: "A simple method for testing your bot's authentication token".
        me = await self._call(session, channel, "getMe", {})
        return f"bot @{(me or {}).get('username', '?')}"

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        ref = SentRef(target=target)
        parts = split_text(text, MAX_TEXT)
        for i, part in enumerate(parts):
            payload: dict[str, Any] = {"chat_id": target["chat_id"], "text": telegram_html(part), "parse_mode": "HTML"}
            if target.get("message_thread_id"):
                payload["message_thread_id"] = int(target["message_thread_id"])
            if i == 0 and target.get("reply_to", "").isdigit():
                payload["reply_parameters"] = {"message_id": int(target["reply_to"]), "allow_sending_without_reply": True}
            if buttons and i == len(parts) - 1:
                # InlineKeyboardButton.callback_data: "Data to be sent in a callback query to the bot when the button is pressed, 1-64 bytes".
                payload["reply_markup"] = {"inline_keyboard": [[{"text": b.label, "callback_data": b.data[:64]} for b in buttons]]}
            result = await self._call(session, channel, "sendMessage", payload)
            ref.ids.append(str((result or {}).get("message_id", "")))
        return ref

    async def edit(self, session: aiohttp.ClientSession, channel: Channel, ref: SentRef, text: str) -> SentRef:
        first, *rest = split_text(text, MAX_TEXT)
        payload = {"chat_id": ref.target["chat_id"], "message_id": int(ref.ids[-1]), "text": telegram_html(first), "parse_mode": "HTML"}
        await self._call(session, channel, "editMessageText", payload)
        if rest:
            return await self.send(session, channel, {k: v for k, v in ref.target.items() if k != "reply_to"}, "\n\n".join(rest))
        return ref

    async def answer_button(self, session: aiohttp.ClientSession, channel: Channel, inbound: Inbound, note: str, decided: bool) -> None:
        # answerCallbackQuery: "the answer will be displayed to the user as a notification at the top of the chat
        # screen"; clients show a progress bar until it is called.
        await self._call(session, channel, "answerCallbackQuery", {"callback_query_id": inbound.button_ref["callback_query_id"], "text": note})
        if decided and may_clear(inbound):
            payload = {
                "chat_id": inbound.button_ref["chat_id"],
                "message_id": int(inbound.button_ref["message_id"]),
                "reply_markup": {"inline_keyboard": []},
            }
            await self._call(session, channel, "editMessageReplyMarkup", payload)


def may_clear(inbound: Inbound) -> bool:
    """The decided prompt loses its buttons (a second press would find no pending call)."""
    return inbound.button_ref.get("message_id", "").isdigit() and bool(inbound.button_ref.get("chat_id"))


ADAPTER: PlatformAdapter = Telegram()
