"""Request bodies of the channel routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, JsonValue
from pydantic.json_schema import JsonDict

from platform_server.features.channels.platforms import ADAPTERS
from platform_server.features.channels.platforms.base import SettingField
from platform_server.features.channels.platforms.settings import URL_KEYS
from platform_server.ids import LAST_EVENT_ID_PATTERN, LONG_ID_PATTERN, NOT_BLANK_PATTERN
from platform_server.serialize import View
from platform_server.web.secret_fields import ChannelSecret

ChannelType = Literal["im_a", "im_b", "im_c", "im_d", "im_e", "im_f", "im_g", "im_h", "webchat"]

HTTP_URL_PATTERN = "^https?://"  # a reply URL or a platform's base URL: http(s) (service.check_draft, settings.merge)
# service.check_settings, for every type: approverIds is a list of at most 100 sender ids
APPROVER_IDS: JsonDict = {"type": "array", "nullable": True, "maxItems": 100, "items": {"type": "string", "minLength": 1, "maxLength": 128}}


def _setting(field: SettingField, extra: JsonDict) -> JsonDict:
    """One platform setting as platforms.settings.merge checks it: a secret is a non-blank text (null: not given), a
    public one a text, one of its choices when it has some; a required one is given (and not empty)."""
    schema: JsonDict = (
        {"type": "string", "maxLength": 4000, "pattern": NOT_BLANK_PATTERN}
        if field.secret
        else {"type": "string", "maxLength": 2000, **({"minLength": 1} if field.required else {})}
    )
    if field.choices:
        schema["enum"] = [*field.choices, *([] if field.required else [None])]
    if field.key in URL_KEYS:
        schema["pattern"] = HTTP_URL_PATTERN
    if not field.required:
        schema["nullable"] = True
    return {**schema, **extra}


def _channel_kinds() -> list[JsonDict]:
    """Per channel type, what service.create checks: a platform's settings (its fields, the base URLs) and a reply URL
    that is http(s) when given; a webchat takes any settings (approverIds aside) and ignores a reply URL."""
    kinds: list[JsonDict] = []
    for kind, adapter in sorted(ADAPTERS.items()):
        extra: dict[str, JsonDict] = getattr(adapter, "settings_schemas", {})  # what the platform's check_settings adds
        fields: JsonDict = {f.key: _setting(f, extra.get(f.key, {})) for f in adapter.fields}
        urls: JsonDict = {
            key: {"type": "string", "nullable": True, "maxLength": 2000, "pattern": HTTP_URL_PATTERN} for key in URL_KEYS if key not in fields
        }
        required: list[JsonValue] = [f.key for f in adapter.fields if f.required]
        settings: JsonDict = {"type": "object", "properties": {**fields, **urls, "approverIds": APPROVER_IDS}}
        if required:
            settings["required"] = required
        kinds.append(
            {
                "required": ["channelType", *(["settings"] if required else [])],
                "properties": {
                    "channelType": {"type": "string", "enum": [kind]},
                    "replyUrl": {"type": "string", "nullable": True, "pattern": HTTP_URL_PATTERN},
                    "settings": settings,
                },
            }
        )
    any_settings: JsonDict = {"type": "object", "properties": {"approverIds": APPROVER_IDS}}
    webchat: JsonDict = {"properties": {"channelType": {"type": "string", "enum": ["webchat"]}, "settings": any_settings}}
    return [*kinds, webchat]


class ChannelCreate(BaseModel):
    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        schema["allOf"] = [{"oneOf": _channel_kinds()}]

    name: str = Field(min_length=1, max_length=100)
    channelType: ChannelType
    agentId: str = Field(pattern=LONG_ID_PATTERN)
    replyUrl: str | None = Field(default=None, max_length=2000)
    secret: ChannelSecret = Field(default=None, min_length=16, max_length=200)
    settings: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True


class ChannelUpdate(BaseModel):  # the stored type decides the settings and the reply URL: a mismatch is a 409
    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        schema["allOf"] = [{"properties": {"settings": {"type": "object", "nullable": True, "properties": {"approverIds": APPROVER_IDS}}}}]

    name: str | None = Field(default=None, min_length=1, max_length=100)
    agentId: str | None = Field(default=None, pattern=LONG_ID_PATTERN)
    replyUrl: str | None = Field(default=None, max_length=2000)
    secret: ChannelSecret = Field(default=None, min_length=16, max_length=200)
    settings: dict[str, Any] | None = None
    enabled: bool | None = None
    rotatePublicToken: bool | None = Field(
        default=None, description="webchat: true issues a new publicToken; the old one stops working at once (embed the new snippet)"
    )


class ToggleRequest(BaseModel):
    enabled: bool | None = Field(default=None, description="Absent: flip")


class WebchatRequest(BaseModel):
    token: str = Field(min_length=1, max_length=200)
    sessionId: str = Field(min_length=1, max_length=128)
    message: str | None = Field(default=None, max_length=20_000)
    reconnect: bool | None = None
    lastEventId: str | None = Field(default=None, pattern=LAST_EVENT_ID_PATTERN)  # chat.service.parse_last_event_id


class PairingBegin(BaseModel):
    channelId: str = Field(pattern=LONG_ID_PATTERN)


class ChannelView(View):
    """A channel (`service.to_dict`): secrets never come back, only which are set."""

    id: str
    workspaceId: str
    name: str
    channelType: str
    agentId: str
    enabled: bool
    replyUrl: str | None
    secretSet: bool
    settings: dict[str, JsonValue] = Field(description="the platform settings as given (secret ones left out)")
    paired: bool
    pairedAccountId: str | None
    health: str | None = Field(description="healthy, unhealthy, or unknown before the first check")
    healthCheckedAt: str | None
    lastInboundAt: str | None
    lastOutboundAt: str | None
    lastError: str | None
    createTime: str | None
    updateTime: str | None
    webhookUrl: str | None
    secretSettingsSet: list[str] | None = Field(default=None, description="the secret settings that are set (messaging platforms)")
    publicToken: str | None = Field(default=None, description="the widget's public token (webchat)")


class NewChannelView(ChannelView):
    secret: str | None = Field(default=None, description="the generated signing secret, shown once (when none was given)")


class ChannelSettingFieldView(View):
    key: str
    label: str
    secret: bool = Field(description="write-only: sealed at rest, never shown again")
    required: bool
    default: str | None
    help: str
    choices: list[str] | None = Field(default=None, description="the only values allowed, when not empty")


class ChannelPlatformView(View):
    channelType: str
    label: str
    help: str
    fields: list[ChannelSettingFieldView]
    secretLabel: str | None
    webhookPath: str


class ChannelPreflightView(View):
    valid: bool
    problems: list[str]


class ChannelHealthView(View):
    channelId: str
    healthy: bool
    message: str
    latencyMs: int
    status: Literal["UP", "DOWN"]
    detail: str = Field(description="same as message")


class ChannelTypeCountsView(View):
    total: int
    enabled: int
    healthy: int
    unhealthy: int


class ChannelsStatusView(View):
    channels: int
    byType: dict[str, ChannelTypeCountsView] = Field(description="channel type -> counts")
    lastInboundAt: str | None
    lastOutboundAt: str | None


class WebchatConfigView(View):
    name: str
    title: str
    welcomeMessage: str
    agentName: str | None
    agentIcon: str | None


class PairingView(View):
    """A QR-code pairing (or registration, or login) session with a channel's gateway."""

    sessionId: str
    channelId: str
    purpose: str = Field(description="qrcode, register or login")
    status: str = Field(description="waiting, scanned, confirmed, expired or failed")
    error: str | None
    expiresAt: str | None


class PairingStartView(PairingView):
    qrcodeImage: str = Field(description="a data: URL of the QR code's PNG")


class ChannelInboundView(View):
    """What became of a platform's message call. A platform that expects its own answer (a URL check, an
    interaction ack, an event acknowledgement) gets that instead, in the shape its documentation gives."""

    accepted: bool
    queued: bool | None = Field(default=None, description="the turn was busy: the message waits as its follow-up")
    queueSize: int | None = None
    conversationId: str | None = None
    reason: str | None = Field(default=None, description="why not accepted: ignored event type, channel disabled, duplicate, ...")
