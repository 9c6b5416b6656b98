"""Request bodies and answers of the conversation routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from platform_server.serialize import View


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


class ConversationView(View):
    """A conversation as the list, page, rename, pin and model routes answer it (`service.to_vo`)."""

    conversationId: str
    title: str | None
    agentId: str | None
    agentName: str | None
    agentIcon: str | None
    username: str | None
    messageCount: int
    lastMessage: str | None
    lastActiveTime: str | None
    updateTime: str | None = Field(description="same as lastActiveTime (the original console reads this name)")
    pinned: bool
    archived: bool
    modelProvider: str | None
    modelName: str | None
    status: Literal["active", "closed"]
    streamStatus: str | None
    source: str | None
    endUserId: str | None
    workspaceId: str
    createTime: str | None


class DeletedCount(View):
    deleted: int


class StreamStatusView(View):
    streamStatus: str | None
    conversationId: str
