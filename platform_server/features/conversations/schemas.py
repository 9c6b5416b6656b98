"""Request bodies of the conversation routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class TitleRequest(BaseModel):
    title: str = Field(min_length=1, max_length=200)


class PinRequest(BaseModel):
    pinned: bool


class ModelRequest(BaseModel):
    modelProvider: str | None = Field(default=None, max_length=100)
    modelName: str | None = Field(default=None, max_length=200)


class BatchDeleteRequest(BaseModel):
    conversationIds: list[str] = Field(min_length=1)


class RatingRequest(BaseModel):
    rating: Literal["up", "down"] | None  # null clears it
