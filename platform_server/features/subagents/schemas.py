"""Request bodies of the subagents routes."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SpawnPauseRequest(BaseModel):
    conversationId: str = Field(min_length=1, max_length=128)
    paused: bool
