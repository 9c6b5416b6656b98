"""Request bodies and answers of the conversation routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, RootModel
from pydantic.config import JsonDict

from platform_server.serialize import View


class TitleRequest(BaseModel):
    title: str = Field(min_length=1, max_length=200)


class PinRequest(BaseModel):
    pinned: bool


_NONE_OR_EMPTY: JsonDict = {"type": "string", "nullable": True, "enum": [None, ""]}
_SOME: JsonDict = {"type": "string", "minLength": 1}  # not null: the field itself is nullable (neither)


class ModelRequest(BaseModel):
    # both (a model) or neither (the agent's default again): service.set_model
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["modelProvider", "modelName"], "properties": {"modelProvider": _SOME, "modelName": _SOME}},
                {"properties": {"modelProvider": _NONE_OR_EMPTY, "modelName": _NONE_OR_EMPTY}},
            ]
        }
    )

    modelProvider: str | None = Field(default=None, max_length=100)
    modelName: str | None = Field(default=None, max_length=200)


class BatchDeleteRequest(BaseModel):
    conversationIds: list[str] = Field(min_length=1, max_length=200)  # service.BATCH_DELETE_MAX, counted as sent


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


class MessageView(View):
    """A stored message (`service.message_vo`); `status` is `streaming` while its answer runs (`generating` for
    the original console)."""

    id: str
    conversationId: str
    role: str = Field(description="user, assistant, tool or system")
    content: str | None
    toolName: str | None
    status: str | None = Field(description="completed, streaming, stopped, failed, ...")
    createTime: str | None
    metadata: dict[str, JsonValue] = Field(
        description="what the turn recorded with the message: toolCalls, reasoning, citations, timing, rating, versions, "
        "toolCallId/arguments/success of a tool result, goalEvaluation, ..."
    )
    contentParts: list[dict[str, JsonValue]] | None = Field(description="the parts the user sent: `{type: text, text}` or `{type: image, url}`")
    promptTokens: int | None
    completionTokens: int | None
    runtimeModel: str | None
    runtimeProvider: str | None


class MessageWindowView(View):
    """The latest `limit` messages (or those before `beforeId`), oldest first."""

    messages: list[MessageView]
    hasMore: bool


class MessageHistoryView(RootModel[list[MessageView] | MessageWindowView]):
    """Every message oldest first, or a window of them when `limit` is given."""
