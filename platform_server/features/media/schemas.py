"""Request bodies of the media routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SynthesizeRequest(BaseModel):
    text: str = Field(min_length=1, max_length=4096)
    voice: str | None = Field(default=None, min_length=1, max_length=50)
    format: Literal["mp3", "wav", "opus"] | None = None  # wav when absent
