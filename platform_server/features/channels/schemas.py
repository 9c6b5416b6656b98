"""Request bodies of the channel routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, JsonValue

from platform_server.serialize import View
from platform_server.web.secret_fields import ChannelSecret

ChannelType = Literal["im_a", "im_b", "im_c", "im_d", "im_e", "im_f", "im_g", "im_h", "webchat"]


class ChannelCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    channelType: ChannelType
    agentId: str = Field(pattern=r"^[0-9]{1,19}$")
    replyUrl: str | None = Field(default=None, max_length=2000)
    secret: ChannelSecret = Field(default=None, min_length=16, max_length=200)
    settings: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True


class ChannelUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    agentId: str | None = Field(default=None, pattern=r"^[0-9]{1,19}$")
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
    lastEventId: str | None = None


class PairingBegin(BaseModel):
    channelId: str = Field(pattern=r"^[0-9]{1,19}$")


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
