"""Request bodies of the media routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from platform_server.features.chat.schemas import ChatUploadView
from platform_server.serialize import View


class SynthesizeRequest(BaseModel):
    text: str = Field(min_length=1, max_length=4096)
    voice: str | None = Field(default=None, min_length=1, max_length=50)
    format: Literal["mp3", "wav", "opus"] | None = None  # wav when absent


class TranscriptView(View):
    """What speech to text heard, and which engine and model heard it (`provider` null: the local engine)."""

    text: str
    model: str
    provider: str | None
    engine: str


class VoiceView(View):
    id: str
    name: str


class VoicesView(View):
    provider: str | None
    engine: str
    default: str
    voices: list[VoiceView]


class ConversationGeneratedFileView(View):
    id: str
    name: str
    size: int
    contentType: str
    state: Literal["available", "downloaded", "expired"]
    url: str | None = Field(description="the one-time download link while `available`, else null")
    createTime: str
    expiresAt: str


class ConversationFilesView(View):
    conversationId: str
    uploads: list[ChatUploadView]
    generated: list[ConversationGeneratedFileView]
