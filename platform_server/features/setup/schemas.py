"""Request bodies of the setup routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from platform_server.features.auth.schemas import USERNAME_PATTERN
from platform_server.serialize import View


class InitRequest(BaseModel):
    username: str = Field(default="admin", pattern=USERNAME_PATTERN)
    password: str = Field(min_length=8, max_length=256)
    nickname: str | None = Field(default=None, max_length=100)
    language: Literal["en-US", "zh-CN"] | None = None  # absent: the configured default_language (en-US)
    timezone: str | None = Field(default=None, max_length=64, description="IANA time zone (the console sends the browser's)")
    setupToken: str | None = Field(default=None, max_length=200, description="Needed from a non-loopback address")


class SetupStatusView(View):
    initialized: bool
    hasAdmin: bool
    version: str


class OnboardingView(SetupStatusView):
    completed: bool = Field(description="every step done")
    steps: dict[str, bool] = Field(description="step name (adminCreated, and those areas register) -> done")
    hasDefaultModel: bool
    ollamaOnline: bool
