"""Request bodies of the cron routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, model_validator
from pydantic.json_schema import JsonDict

from platform_server.features.cron.events import MAX_FILTER_ENTRIES, MAX_MESSAGE_CHARS, MAX_VALUE_CHARS
from platform_server.features.cron.schedule import CRON_PATTERN, ZONE_PATTERN
from platform_server.ids import CONVERSATION_ID_PATTERN, NOT_BLANK_PATTERN, PY_SPACES
from platform_server.web.bodies import explained

ConversationMode = Literal["new", "fixed"]


# An id sent as text is a Long (web.errors.parse_long): digits, an optional sign, spaces around as strip() reads them
# (`\s` is ECMA's set to a validator: U+FEFF is one there and not to strip(), U+001C the reverse)
_LONG_TEXT: JsonDict = {"type": "string", "pattern": f"^[{PY_SPACES}]*-?[0-9]{{1,18}}[{PY_SPACES}]*$"}
_INT64: JsonDict = {"type": "integer", "format": "int64"}
LONG_ID: JsonDict = {"anyOf": [_LONG_TEXT, _INT64]}


# pattern type -> {pattern field: event payload field}; the fields are exact-value filters (patterns.apply_pattern)
EVENT_PATTERNS: dict[str, dict[str, str]] = {
    "channel_message": {"channelType": "channelType", "senderEquals": "senderId"},
    "workflow_completion": {"sourceWorkflowId": "workflowId", "stateFilter": "status"},
    "webhook": {},
}
CRON_KEYS = ("cron", "timezone")  # a cron pattern's fields: meaningless in an event pattern (the form keeps them)
# A JSON string as the console writes one (JSON.stringify of form text: no escapes), of a filter value's length
_JSON_TEXT = rf'"[^"\\\x00-\x1f]{{0,{MAX_VALUE_CHARS}}}"'


def _event_pattern_json(names: tuple[str, ...]) -> str:
    member = f'"({"|".join((*CRON_KEYS, *names))})": ?({_JSON_TEXT}|null)'
    return f"^\\{{({member}(, ?{member})*)?\\}}$"


# patternJson per patternType, as the console writes it (and json.dumps, with spaces, answers it): a cron pattern is
# `{"cron": "<0 seconds and 5 fields, or 5>", "timezone"?: "<zone>"}`, an event pattern an object of its filter
# fields (and the cron ones, ignored), each a string or null. patterns.apply_pattern checks the text against these.
PATTERN_JSON: dict[str, str] = {
    "cron": f'^\\{{"cron": ?"(0 )?{CRON_PATTERN[1:-1]}"(, ?"timezone": ?"{ZONE_PATTERN[1:-1]}")?\\}}$',
    **{kind: _event_pattern_json(tuple(names)) for kind, names in EVENT_PATTERNS.items()},
}

# The rules the services check, stated for the document (a generated client and the fuzzer send only what they allow)
_TEXT: JsonDict = {"pattern": NOT_BLANK_PATTERN}  # service.check_text: not blank
_CRON: JsonDict = {"pattern": CRON_PATTERN}  # schedule.normalize takes every expression of the pattern
_ZONE: JsonDict = {"pattern": ZONE_PATTERN}  # schedule.given_zone: this shape (400), then a zone the database has (404)


def _only_null(*names: str) -> JsonDict:
    """Fields that must be absent or null in a branch."""
    return {name: {"type": "string", "nullable": True, "enum": [None]} for name in names}


# service.check_conversation: `new` (the default) takes no conversation id (absent, null or empty), `fixed` needs one
CONVERSATION_RULE: JsonDict = {
    "oneOf": [
        {
            "properties": {
                "conversationMode": {"type": "string", "enum": ["new"]},
                "conversationId": {"type": "string", "nullable": True, "enum": ["", None]},
            }
        },
        {
            "required": ["conversationMode", "conversationId"],
            "properties": {
                "conversationMode": {"type": "string", "enum": ["fixed"]},
                "conversationId": {"type": "string", "pattern": CONVERSATION_ID_PATTERN},
            },
        },
    ]
}


# An update's conversation fields: a mode given decides as on create (a `fixed` without an id keeps the stored id, so
# the stored state decides: 409); no mode leaves the stored mode to decide (service.check_conversation's 409), and an
# id given is then empty or a conversation id (a fixed job checks it)
CONVERSATION_UPDATE_RULE: JsonDict = {
    "anyOf": [
        {
            "properties": {
                **_only_null("conversationMode"),
                "conversationId": {"type": "string", "nullable": True, "pattern": f"^$|{CONVERSATION_ID_PATTERN}"},
            }
        },
        {
            "required": ["conversationMode"],
            "properties": {
                "conversationMode": {"type": "string", "enum": ["new"]},
                "conversationId": {"type": "string", "nullable": True, "enum": ["", None]},
            },
        },
        {
            "required": ["conversationMode"],
            "properties": {
                "conversationMode": {"type": "string", "enum": ["fixed"]},
                "conversationId": {"type": "string", "pattern": CONVERSATION_ID_PATTERN},
            },
        },
    ]
}


class CronJobCreate(BaseModel):
    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        """The conversation's two modes (CONVERSATION_RULE), as service.create checks them."""
        schema["allOf"] = [CONVERSATION_RULE]

    name: str = Field(min_length=1, max_length=100, json_schema_extra=_TEXT)
    agentId: str | int = Field(json_schema_extra=LONG_ID)
    cronExpression: str = Field(min_length=1, max_length=200, json_schema_extra=_CRON)
    timezone: str | None = Field(default=None, max_length=64, json_schema_extra=_ZONE)
    # triggerMessage: the original console's name for the message
    message: str = Field(min_length=1, max_length=20_000, validation_alias=AliasChoices("message", "triggerMessage"), json_schema_extra=_TEXT)
    enabled: bool = True
    conversationMode: ConversationMode = "new"
    # the original console's job kinds: only `text` (a message to the agent) exists here
    taskType: Literal["text"] | None = None
    conversationId: str | None = Field(default=None, max_length=128)


class CronJobUpdate(BaseModel):  # the create's rules for each field it gives (a sparse update)
    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        schema["allOf"] = [CONVERSATION_UPDATE_RULE]

    name: str | None = Field(default=None, min_length=1, max_length=100, json_schema_extra=_TEXT)
    agentId: str | int | None = None
    cronExpression: str | None = Field(default=None, min_length=1, max_length=200, json_schema_extra=_CRON)
    timezone: str | None = Field(default=None, max_length=64, json_schema_extra=_ZONE)
    message: str | None = Field(
        default=None, min_length=1, max_length=20_000, validation_alias=AliasChoices("message", "triggerMessage"), json_schema_extra=_TEXT
    )
    enabled: bool | None = None
    conversationMode: ConversationMode | None = None
    conversationId: str | None = Field(default=None, max_length=128)
    taskType: Literal["text"] | None = None


class ToggleRequest(BaseModel):
    enabled: bool | None = None


Scalar = str | int | float | bool | None
# A filter: up to 20 paths (any key: events.check_filter) to the value they must equal, a text of up to 2,000 characters
_FILTER: JsonDict = {
    "maxProperties": MAX_FILTER_ENTRIES,
    "additionalProperties": {
        "nullable": True,
        "anyOf": [{"type": "string", "maxLength": MAX_VALUE_CHARS}, {"type": "number"}, {"type": "boolean"}],
    },
}


# An event's type, as triggers._EVENT_TYPE checks it
EVENT_TYPE_PATTERN = explained(r"^[A-Za-z0-9_.:/\-]{1,100}$", "1-100 characters of letters, digits and _ . : / -")
# A template is empty (none given) or says something: triggers.create refuses a blank one
TEMPLATE_PATTERN = explained(f"^$|{NOT_BLANK_PATTERN}", "must be empty or not blank")
_NULLABLE_LONG: JsonDict = {"anyOf": [_LONG_TEXT, _INT64, {"type": "null"}]}


def _console_patterns() -> list[JsonDict]:
    """A console pattern: one of patterns.PATTERN_TYPES and JSON text its pattern describes (a cron one needs it)."""
    return [
        {
            "required": ["patternType", *(["patternJson"] if kind == "cron" else [])],
            "properties": {
                "patternType": {"type": "string", "enum": [kind]},
                "patternJson": {"type": "string", "pattern": pattern, **({} if kind == "cron" else {"nullable": True})},
            },
        }
        for kind, pattern in PATTERN_JSON.items()
    ]


def _trigger_update_rules() -> list[JsonDict]:
    """What triggers.update checks between fields, as one `anyOf`: a console pattern as on create (its pattern decides,
    the kind fields are ignored), the stored pattern's type echoed (an event type outside PATTERN_TYPES: unchanged, or
    a 409), or no pattern, where a type given takes only its own kind's fields and none leaves the kind to the stored
    type (triggers._apply_kind: a 409). Then the conversation."""
    echoed: JsonDict = {
        "required": ["patternType"],
        "properties": {"patternType": {"type": "string", "not": {"enum": list(PATTERN_JSON)}}},
    }
    no_pattern = _only_null("patternType")
    kinds: list[JsonDict] = [
        {"properties": {**no_pattern, **_only_null("type")}},
        {"required": ["type"], "properties": {**no_pattern, "type": {"type": "string", "enum": ["cron"]}, **_only_null("eventType", "filter")}},
        {
            "required": ["type"],
            "properties": {**no_pattern, "type": {"type": "string", "enum": ["event"]}, **_only_null("cronExpression", "timezone")},
        },
    ]
    return [{"anyOf": [*kinds, *_console_patterns(), echoed]}, CONVERSATION_UPDATE_RULE]


def _trigger_rules() -> list[JsonDict]:
    """What triggers.create checks between fields, as `allOf` groups: the kind (a cron or an event trigger, or the
    console's pattern of one of patterns.PATTERN_TYPES as JSON text its pattern describes), the target (a workflow by
    targetId, or an agent by agentId or targetId), a message unless a workflow is the target, the conversation."""
    cron_kind: JsonDict = {
        "required": ["type", "cronExpression"],
        "properties": {
            "type": {"type": "string", "enum": ["cron"]},
            "cronExpression": {"type": "string", **_CRON},
            **_only_null("patternType", "eventType", "filter"),
        },
    }
    event_kind: JsonDict = {
        "required": ["type", "eventType"],
        "properties": {
            "type": {"type": "string", "enum": ["event"]},
            "eventType": {"type": "string", "pattern": EVENT_TYPE_PATTERN},
            **_only_null("patternType", "cronExpression", "timezone"),
        },
    }
    workflow: JsonDict = {
        "required": ["targetType", "targetId"],
        "properties": {"targetType": {"type": "string", "enum": ["workflow"]}, "targetId": {**LONG_ID, "not": {"enum": ["0", 0]}}},
    }
    agent: JsonDict = {
        "properties": {"targetType": {"type": "string", "nullable": True, "enum": ["agent", None]}},
        "anyOf": [{"required": ["agentId"], "properties": {"agentId": LONG_ID}}, {"required": ["targetId"], "properties": {"targetId": LONG_ID}}],
    }
    message: JsonDict = {
        "anyOf": [
            {"required": ["targetType"], "properties": {"targetType": {"type": "string", "enum": ["workflow"]}}},
            {"required": ["message"], "properties": {"message": {"type": "string"}}},
            {"required": ["payloadTemplate"], "properties": {"payloadTemplate": {"type": "string", "minLength": 1}}},
        ]
    }
    return [{"oneOf": [cron_kind, event_kind, *_console_patterns()]}, {"oneOf": [workflow, agent]}, message, CONVERSATION_RULE]


class TriggerCreate(BaseModel):
    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        schema["allOf"] = _trigger_rules()

    name: str = Field(min_length=1, max_length=100, json_schema_extra=_TEXT)
    agentId: str | int | None = Field(default=None, json_schema_extra=_NULLABLE_LONG)  # required unless the target is a workflow
    type: Literal["cron", "event"] | None = None  # required unless patternType says it
    cronExpression: str | None = Field(default=None, max_length=200, json_schema_extra=_CRON)
    timezone: str | None = Field(default=None, max_length=64, json_schema_extra=_ZONE)
    eventType: str | None = Field(default=None, max_length=100, pattern=EVENT_TYPE_PATTERN)
    filter: dict[str, Scalar] | None = Field(default=None, json_schema_extra=_FILTER)  # its limits: events.check_filter
    message: str | None = Field(default=None, min_length=1, max_length=MAX_MESSAGE_CHARS, json_schema_extra=_TEXT)
    enabled: bool = True
    conversationMode: ConversationMode = "new"
    conversationId: str | None = Field(default=None, max_length=128)
    # the original console's workflow triggers: a pattern (cron, channel_message, workflow_completion,
    # webhook) as JSON text, a target (a workflow) and the run input template
    patternType: Literal["cron", "channel_message", "workflow_completion", "webhook"] | None = None
    patternJson: str | None = Field(default=None, max_length=4000)
    targetType: Literal["agent", "workflow"] | None = None
    targetId: str | int | None = Field(default=None, json_schema_extra=_NULLABLE_LONG)
    payloadTemplate: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS, pattern=TEMPLATE_PATTERN)


class TriggerUpdate(BaseModel):  # the create's rules for each field it gives (a sparse update)
    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        schema["allOf"] = _trigger_update_rules()

    name: str | None = Field(default=None, min_length=1, max_length=100, json_schema_extra=_TEXT)
    agentId: str | int | None = None
    type: Literal["cron", "event"] | None = None
    cronExpression: str | None = Field(default=None, max_length=200, json_schema_extra=_CRON)
    timezone: str | None = Field(default=None, max_length=64, json_schema_extra=_ZONE)
    eventType: str | None = Field(default=None, max_length=100, pattern=EVENT_TYPE_PATTERN)
    filter: dict[str, Scalar] | None = Field(default=None, json_schema_extra=_FILTER)
    message: str | None = Field(default=None, min_length=1, max_length=MAX_MESSAGE_CHARS, json_schema_extra=_TEXT)
    enabled: bool | None = None
    conversationMode: ConversationMode | None = None
    conversationId: str | None = Field(default=None, max_length=128)
    patternType: str | None = Field(default=None, max_length=40)
    patternJson: str | None = Field(default=None, max_length=4000)
    targetType: Literal["agent", "workflow"] | None = None
    targetId: str | int | None = None
    payloadTemplate: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)


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
