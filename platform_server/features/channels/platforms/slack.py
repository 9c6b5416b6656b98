"""im_d: Slack, through the Events API and the Web API, with Slack's official SDK (`slack_sdk`).

slack_sdk is Slack's own, kept in step with the API and dependency-free: its `SignatureVerifier` does the documented
v0 check and its `AsyncWebClient` runs on aiohttp, so it takes our session pinned to the vetted API host."""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.platforms.base import (
    Button,
    Handshake,
    Inbound,
    PlatformAdapter,
    SentRef,
    SettingField,
    Target,
    base_url,
    parse_button,
    split_text,
)
from platform_server.features.channels.platforms.markup import slack_mrkdwn
from platform_server.features.channels.platforms.settings import secret_of
from platform_server.lazy import lazy_import
from platform_server.web.errors import BadRequest, Unauthorized

if TYPE_CHECKING:
    import aiohttp
    import slack_sdk.errors as slack_errors
    import slack_sdk.signature as slack_signature
    import slack_sdk.web.async_client as slack_web

    from platform_server.features.channels.models import Channel
else:
    slack_errors = lazy_import("slack_sdk.errors")
    slack_signature = lazy_import("slack_sdk.signature")
    slack_web = lazy_import("slack_sdk.web.async_client")

# chat.postMessage: "The text field ... we recommend a length of no more than 4,000 characters"; a section block's
# text is at most 3,000 characters, so a prompt with buttons keeps its text under that.
MAX_TEXT = 4000
MAX_SECTION = 3000
_MENTION = re.compile(r"^\s*<@[A-Z0-9]+>\s*")


class _Clock:
    """slack_sdk's clock, settable so the docs' test vector (a 2018 timestamp) can be checked."""

    def __init__(self, now: float | None) -> None:
        self._now = now

    def now(self) -> float:
        return self._now if self._now is not None else time.time()


def signature_valid(secret: str, headers: Mapping[str, str], body: bytes, now: float | None = None) -> bool:
    """Slack's "Verifying requests from Slack": `v0=` + hex HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>:<body>` with
    the signing secret, compared to X-Slack-Signature; "If the request timestamp is more than five minutes from local
    time, it could be a replay attack, so let's ignore it" (slack_sdk checks both)."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    if not timestamp.isdigit():
        return False
    verifier = slack_signature.SignatureVerifier(secret, clock=_Clock(now))  # type: ignore[arg-type]
    return bool(verifier.is_valid(body=body, timestamp=timestamp, signature=headers.get("X-Slack-Signature", "")))


class Slack:
    kind = "im_d"
    label = "Slack"
    default_base_url = "https://slack.com/api"
    secret_label = "Signing secret (Basic Information of the Slack app)"
    fields = (
        SettingField("botToken", "Bot user OAuth token", secret=True, help="Starts with xoxb-; from OAuth & Permissions after installing the app."),
    )
    help = (
        "Create a Slack app for your workspace in Slack's app management pages. Under OAuth & Permissions add the bot "
        "scopes app_mentions:read, chat:write and im:history, install the app and copy the bot user OAuth token (xoxb-...) "
        "into Bot user OAuth token; copy the signing secret from Basic Information into the channel secret. Save the "
        "channel, then paste its webhook URL as the Request URL under Event Subscriptions (subscribe to the bot events "
        "app_mention and message.im) and as the Request URL under Interactivity, which the approval buttons use."
    )

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        secret = channel.secret if channel is not None else "unknown-channel-unknown-secret"
        if not signature_valid(secret, headers, body) or channel is None:
            raise Unauthorized("Invalid or stale Slack request signature")

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | Handshake | None:
        if headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            # Interactivity: "the payload ... is sent as application/x-www-form-urlencoded with a single payload parameter".
            payload = urllib.parse.parse_qs(body.decode("utf-8", "replace")).get("payload", [""])[0]
            return self._interaction(_json(payload))
        data = _json(body.decode("utf-8", "replace"))
        kind = data.get("type")
        if kind == "url_verification":
            # "respond to the HTTP POST request with the challenge attribute value"
            return Handshake({"challenge": str(data.get("challenge", ""))})
        if kind != "event_callback" or not isinstance(data.get("event"), dict):
            return None
        event = data["event"]
        # A DM arrives as `message` (channel_type im); in channels the bot answers its `app_mention` only (the same
        # message also arrives as message.channels when subscribed: answering both would answer twice).
        if event.get("type") == "message" and event.get("channel_type") != "im":
            return None
        if event.get("type") not in ("message", "app_mention"):
            return None
        # Bot messages (ours included) and edits/deletions carry bot_id or a subtype: answering them would loop. A
        # message with files ("file_share") is a person's message: its text is answered, the files are named.
        subtype = event.get("subtype")
        if event.get("bot_id") or subtype not in (None, "file_share") or not event.get("user") or not isinstance(event.get("text"), str):
            return None
        text = _MENTION.sub("", event["text"]).strip()
        names = [str(f.get("name") or f.get("title") or "file") for f in event.get("files") or [] if isinstance(f, dict)]
        if names:
            text = (text + "\n" if text else "") + f"[the user shared: {', '.join(names)}]"
        if not text:
            return None
        target: Target = {"channel": str(event.get("channel", ""))}
        if event.get("type") == "app_mention" or event.get("thread_ts"):
            target["thread_ts"] = str(event.get("thread_ts") or event.get("ts", ""))  # answer in the thread
        # Retries (X-Slack-Retry-Num) carry the same event_id: "event_id: a unique identifier for this specific event".
        event_id = str(data.get("event_id") or f"{event.get('channel')}:{event.get('ts')}")
        return Inbound(event_id=event_id, sender_id=str(event["user"]), text=text[:20_000], target=target)

    @staticmethod
    def _interaction(payload: dict[str, Any]) -> Inbound | None:
        if payload.get("type") != "block_actions":
            return None
        actions = payload.get("actions") or []
        action = actions[0] if actions and isinstance(actions[0], dict) else {}
        decision = parse_button(str(action.get("value") or ""))
        user = payload.get("user") or {}
        if decision is None or not isinstance(user, dict) or not user.get("id"):
            return None
        channel_id = str((payload.get("channel") or {}).get("id") or (payload.get("container") or {}).get("channel_id") or "")
        message = payload.get("message") or {}
        target: Target = {"channel": channel_id}
        if message.get("thread_ts"):
            target["thread_ts"] = str(message["thread_ts"])
        return Inbound(
            event_id=f"action:{payload.get('trigger_id') or action.get('action_ts')}",
            sender_id=str(user["id"]),
            text="",
            target=target,
            command=decision[0],
            conversation_user=decision[1],
            button_ref={"channel": channel_id, "ts": str(message.get("ts") or ""), "text": str(message.get("text") or "")},
        )

    def _client(self, session: aiohttp.ClientSession, channel: Channel) -> slack_web.AsyncWebClient:
        token = secret_of(channel, "botToken")
        if not token:
            raise ChannelError("Slack: the bot token is not set")
        client = slack_web.AsyncWebClient(token=token, base_url=base_url(self, channel) + "/", session=session)
        client.proxy = None  # the session is pinned to the vetted API host: no proxy from the environment
        return client

    async def _call(self, session: aiohttp.ClientSession, row: Channel, method: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            response = await self._client(session, row).api_call(method, json=args)
        except slack_errors.SlackApiError as exc:  # {"ok": false, "error": "..."}
            raise ChannelError(f"Slack {method}: {exc.response.get('error', 'error')}")
        except (slack_errors.SlackClientError, OSError, TimeoutError) as exc:
            raise ChannelError(f"Slack {method}: {type(exc).__name__}: {exc}")
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def probe(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        # auth.test: "Checks authentication & identity".
        data = await self._call(session, channel, "auth.test", {})
        return f"bot {data.get('user', '?')} in {data.get('team', '?')}"

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        ref = SentRef(target=target)
        parts = split_text(text, MAX_SECTION if buttons else MAX_TEXT)
        for i, part in enumerate(parts):
            args: dict[str, Any] = {"channel": target["channel"], "text": slack_mrkdwn(part), "mrkdwn": True}
            if target.get("thread_ts"):
                args["thread_ts"] = target["thread_ts"]
            if buttons and i == len(parts) - 1:
                args["blocks"] = blocks_of(args["text"], buttons)
            data = await self._call(session, channel, "chat.postMessage", args)
            ref.ids.append(str(data.get("ts", "")))
        return ref

    async def edit(self, session: aiohttp.ClientSession, channel: Channel, ref: SentRef, text: str) -> SentRef:
        first, *rest = split_text(text, MAX_TEXT)
        await self._call(session, channel, "chat.update", {"channel": ref.target["channel"], "ts": ref.ids[-1], "text": slack_mrkdwn(first)})
        return await self.send(session, channel, ref.target, "\n\n".join(rest)) if rest else ref

    async def answer_button(self, session: aiohttp.ClientSession, channel: Channel, inbound: Inbound, note: str, decided: bool) -> None:
        ref = inbound.button_ref
        if decided and ref.get("ts"):  # the prompt keeps its text and loses its buttons: "Approved by @user"
            text = f"{ref.get('text', '')}\n{note[:-1]} by <@{inbound.sender_id}>."
            await self._call(session, channel, "chat.update", {"channel": ref["channel"], "ts": ref["ts"], "text": text, "blocks": []})
        elif not decided:  # chat.postEphemeral: "visible only to the assigned user"
            await self._call(session, channel, "chat.postEphemeral", {"channel": ref["channel"], "user": inbound.sender_id, "text": note})


def blocks_of(text: str, buttons: list[Button]) -> list[dict[str, Any]]:
    """Block Kit: the prompt as a section, the buttons in an actions block (button `value` comes back in block_actions)."""
    elements = [
        {"type": "button", "text": {"type": "plain_text", "text": b.label}, "action_id": f"approval_{i}", "value": b.data, "style": b.style}
        for i, b in enumerate(buttons)
    ]
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}, {"type": "actions", "elements": elements}]


def _json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        raise BadRequest("Slack request body must be JSON")
    if not isinstance(data, dict):
        raise BadRequest("Slack request body must be a JSON object")
    return data


ADAPTER: PlatformAdapter = Slack()
