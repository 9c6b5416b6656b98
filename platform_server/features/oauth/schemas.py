"""Request bodies of the oauth routes."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CallbackPaste(BaseModel):
    callbackUrl: str = Field(min_length=1, max_length=8000)


class DeviceSessionRef(BaseModel):
    sessionId: str | None = Field(default=None, max_length=200)
