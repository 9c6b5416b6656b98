"""Request bodies of the chat routes."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ExecuteRequest(BaseModel):
    task: str = Field(min_length=1, max_length=200_000)
    conversationId: str | None = Field(default=None, max_length=128)
