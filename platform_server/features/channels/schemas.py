"""Request bodies of the channel routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

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
    enabled: bool


class WebchatRequest(BaseModel):
    token: str = Field(min_length=1, max_length=200)
    sessionId: str = Field(min_length=1, max_length=128)
    message: str | None = Field(default=None, max_length=20_000)
    reconnect: bool | None = None
    lastEventId: str | None = None


class PairingBegin(BaseModel):
    channelId: str = Field(pattern=r"^[0-9]{1,19}$")
