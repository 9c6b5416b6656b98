"""Request bodies of the cron routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, model_validator
from pydantic.json_schema import JsonDict

from platform_server.features.cron.events import MAX_MESSAGE_CHARS
from platform_server.web.bodies import explained

ConversationMode = Literal["new", "fixed"]


# An id sent as text is a Long (web.errors.parse_long): digits, an optional sign, spaces around
_LONG_TEXT: JsonDict = {"type": "string", "pattern": "^\\s*-?[0-9]{1,18}\\s*$"}
_INT64: JsonDict = {"type": "integer", "format": "int64"}
LONG_ID: JsonDict = {"anyOf": [_LONG_TEXT, _INT64]}


class CronJobCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    agentId: str | int = Field(json_schema_extra=LONG_ID)
    cronExpression: str = Field(min_length=1, max_length=200)
    timezone: str | None = Field(default=None, max_length=64)
    # triggerMessage: the original console's name for the message
    message: str = Field(min_length=1, max_length=20_000, validation_alias=AliasChoices("message", "triggerMessage"))
    enabled: bool = True
    conversationMode: ConversationMode = "new"
    # the original console's job kinds: only `text` (a message to the agent) exists here
    taskType: Literal["text"] | None = None
    conversationId: str | None = Field(default=None, max_length=128)


class CronJobUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    agentId: str | int | None = None
    cronExpression: str | None = Field(default=None, min_length=1, max_length=200)
    timezone: str | None = Field(default=None, max_length=64)
    message: str | None = Field(default=None, min_length=1, max_length=20_000, validation_alias=AliasChoices("message", "triggerMessage"))
    enabled: bool | None = None
    conversationMode: ConversationMode | None = None
    conversationId: str | None = Field(default=None, max_length=128)
    taskType: Literal["text"] | None = None


class ToggleRequest(BaseModel):
    enabled: bool | None = None


Scalar = str | int | float | bool | None


class TriggerCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    agentId: str | int | None = Field(
        default=None, json_schema_extra={"anyOf": [_LONG_TEXT, _INT64, {"type": "null"}]}
    )  # required unless the target is a workflow
    type: Literal["cron", "event"] | None = None  # required unless patternType says it
    cronExpression: str | None = Field(default=None, max_length=200)
    timezone: str | None = Field(default=None, max_length=64)
    eventType: str | None = Field(default=None, max_length=100)
    filter: dict[str, Scalar] | None = None
    message: str | None = Field(default=None, min_length=1, max_length=MAX_MESSAGE_CHARS)
    enabled: bool = True
    conversationMode: ConversationMode = "new"
    conversationId: str | None = Field(default=None, max_length=128)
    # the original console's workflow triggers: a pattern (cron, channel_message, workflow_completion,
    # webhook) as JSON text, a target (a workflow) and the run input template
    patternType: str | None = Field(default=None, max_length=40)
    patternJson: str | None = Field(default=None, max_length=4000)
    targetType: Literal["agent", "workflow"] | None = None
    targetId: str | int | None = None
    payloadTemplate: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)


class TriggerUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    agentId: str | int | None = None
    type: Literal["cron", "event"] | None = None
    cronExpression: str | None = Field(default=None, max_length=200)
    timezone: str | None = Field(default=None, max_length=64)
    eventType: str | None = Field(default=None, max_length=100)
    filter: dict[str, Scalar] | None = None
    message: str | None = Field(default=None, min_length=1, max_length=MAX_MESSAGE_CHARS)
    enabled: bool | None = None
    conversationMode: ConversationMode | None = None
    conversationId: str | None = Field(default=None, max_length=128)
    patternType: str | None = Field(default=None, max_length=40)
    patternJson: str | None = Field(default=None, max_length=4000)
    targetType: Literal["agent", "workflow"] | None = None
    targetId: str | int | None = None
    payloadTemplate: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)


# An event's type, as triggers._EVENT_TYPE checks it
EVENT_TYPE_PATTERN = explained(r"^[A-Za-z0-9_.:/\-]{1,100}$", "1-100 characters of letters, digits and _ . : / -")


class EventEnvelope(BaseModel):
    type: str = Field(min_length=1, max_length=100, pattern=EVENT_TYPE_PATTERN)
    source: str | None = Field(default=None, max_length=200)
    payload: dict[str, Any] = Field(default_factory=dict)
    id: str | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="before")
    @classmethod
    def _console(cls, data: Any) -> Any:
        # the original console's envelope: {patternType, eventId, senderId, data}
        if isinstance(data, dict) and "type" not in data and "patternType" in data:
            payload = dict(data.get("data") or {}) if isinstance(data.get("data") or {}, dict) else {"data": data.get("data")}
            if data.get("senderId") is not None:
                payload.setdefault("senderId", data["senderId"])
            return {"type": data["patternType"], "payload": payload, "id": data.get("eventId"), "source": "console"}
        return data
