"""What every messaging platform adapter provides (one module per platform, registered in `platforms/__init__.py`).

The webhook handler and the reply worker (`channels.runtime`) only talk to this protocol: the adapter knows its
platform's published verification, payload shapes and send API; the channel row holds what the admin configured
(`settings` for public values, `settings["secrets"]` sealed for tokens, `secret` for the inbound verification key).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import aiohttp

    from platform_server.features.channels.models import Channel

Target = dict[str, str]  # where an answer goes on the platform (chat id, thread, interaction token...): JSON-able


@dataclass(frozen=True)
class SettingField:
    """One setting the platform asks for; `secret` ones are write-only (sealed at rest, never shown again)."""

    key: str
    label: str
    secret: bool = False
    required: bool = True
    default: str | None = None
    help: str = ""
    choices: tuple[str, ...] = ()  # the only values allowed, when given

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "secret": self.secret,
            "required": self.required,
            "default": self.default,
            "help": self.help,
            "choices": list(self.choices),
        }


@dataclass
class Handshake:
    """An immediate answer the platform expects instead of (or before) a turn: Slack url_verification, Discord PING..."""

    body: Any  # dict/list -> JSON; str/bytes -> as is
    status: int = 200
    content_type: str = "application/json"


@dataclass
class Inbound:
    """One message (or approval button press) of an end user, in the platform-neutral shape the runtime needs."""

    event_id: str  # the platform's own id of this delivery: its retries carry the same one (dedupe)
    sender_id: str
    text: str
    target: Target
    sender_name: str | None = None
    command: str | None = None  # "approved" / "denied": a button press deciding the pending call
    conversation_user: str | None = None  # button presses: whose conversation the pending call is in
    ack: Handshake | None = None  # what to answer the webhook call right away (Discord's deferred response)
    button_ref: Target = field(default_factory=dict)  # what the adapter needs to answer a button press


@dataclass(frozen=True)
class Button:
    label: str
    data: str  # carried back in the press: "<decision>:<conversation user>"
    style: str = "primary"  # primary / danger


@dataclass
class SentRef:
    """What `send` posted: the platform's ids of the last part (for `edit`)."""

    ids: list[str] = field(default_factory=list)
    target: Target = field(default_factory=dict)


@runtime_checkable
class PlatformAdapter(Protocol):
    """Read-only members (properties, so a plain class attribute of a narrower type satisfies them)."""

    @property
    def kind(self) -> str:
        """The stand-in token (im_a ... im_h), stored in channel_type and conversation source."""
        ...

    @property
    def label(self) -> str:
        """The platform's human name, shown in the console."""
        ...

    @property
    def fields(self) -> tuple[SettingField, ...]:
        """What the admin fills in (apiBaseUrl is added for every adapter)."""
        ...

    @property
    def help(self) -> str:
        """One link-free paragraph: how to create the bot and where to paste the webhook URL."""
        ...

    @property
    def default_base_url(self) -> str:
        """The platform's public API."""
        ...

    @property
    def secret_label(self) -> str | None:
        """What the channel's `secret` is on this platform (None: not used)."""
        ...

    def verify(self, channel: Channel | None, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> None:
        """Raise Unauthorized/Forbidden (nothing stored) unless the call is signed as the platform documents;
        `channel` is None for an unknown channel id: refuse it the same way as a bad signature."""
        ...

    def parse(self, channel: Channel, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> Inbound | Handshake | None:
        """The verified call as a message, a handshake to answer, or None (an event this bot ignores)."""
        ...

    async def send(
        self, session: aiohttp.ClientSession, channel: Channel, target: Target, text: str, *, buttons: list[Button] | None = None
    ) -> SentRef:
        """Post `text` (Markdown) to the platform's send API: split at its length limit, converted to what it renders."""
        ...


@runtime_checkable
class Editable(Protocol):
    async def edit(self, session: aiohttp.ClientSession, channel: Channel, ref: SentRef, text: str) -> SentRef:
        """Replace the last message of `ref` by `text` (streaming: the answer so far, then all of it); text past the
        platform's length limit follows as new messages. Returns the ref of what is now shown."""
        ...


@runtime_checkable
class ButtonAnswering(Protocol):
    async def answer_button(self, session: aiohttp.ClientSession, channel: Channel, inbound: Inbound, note: str, decided: bool) -> None:
        """Acknowledge a button press (the platform shows `note` to the presser); `decided`: the press decided the
        call (the prompt may lose its buttons), else it was refused (the buttons stay for an approver)."""
        ...


@runtime_checkable
class Probing(Protocol):
    async def probe(self, session: aiohttp.ClientSession, channel: Channel) -> str:
        """Check the credentials against the platform (Telegram getMe, Slack auth.test...): a short description of the
        bot on success, a ChannelError otherwise. Used by the channel health routes."""
        ...


OnInbound = Callable[[Inbound], Awaitable[None]]


@runtime_checkable
class GatewayAdapter(Protocol):
    async def run_gateway(self, allow_hosts: tuple[str, ...], channel: Channel, on_inbound: OnInbound) -> None:
        """A long-lived connection (Discord gateway, DingTalk stream, WeChat long-poll) of one enabled channel: hands each
        message to `on_inbound`; the runtime restarts it with backoff when it returns or raises, cancels it when the
        channel is disabled, changed or deleted. Hosts it connects to are vetted against `allow_hosts` (SSRF rules)."""
        ...


def base_url(adapter: PlatformAdapter, channel: Channel) -> str:
    """The channel's `apiBaseUrl` setting (tests, self-hosted gateways) or the platform's public API."""
    value = (channel.settings or {}).get("apiBaseUrl") or adapter.default_base_url
    return str(value).rstrip("/")


def split_text(text: str, limit: int) -> list[str]:
    """Parts of at most `limit` characters, cut at a paragraph, line or word boundary when there is one; a Markdown
    code fence open at a cut is closed there and opened again in the next part, so each part renders on its own."""
    parts: list[str] = []
    rest = text
    budget = limit - 8  # room for a closing and a reopening fence
    while len(rest) > limit:
        window = rest[:budget]
        cut = max(window.rfind("\n\n"), window.rfind("\n"))
        if cut < budget // 2:
            cut = window.rfind(" ")
        if cut < budget // 2:
            cut = budget
        part, rest = rest[:cut].rstrip(), rest[cut:].lstrip("\n ")
        if part.count("```") % 2:
            part, rest = part + "\n```", "```\n" + rest
        parts.append(part)
    if rest or not parts:
        parts.append(rest)
    return parts


def approval_buttons(conversation_user: str) -> list[Button]:
    """The two buttons of an approval prompt; the press says whose conversation's pending call it decides."""
    return [Button("Approve", f"approved:{conversation_user}"), Button("Deny", f"denied:{conversation_user}", "danger")]


def parse_button(data: str) -> tuple[str, str] | None:
    """(decision, conversation user) of a button's data, or None for data that is not ours."""
    decision, _, user = data.partition(":")
    if decision not in ("approved", "denied") or not user:
        return None
    return decision, user
