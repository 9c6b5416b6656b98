"""Request bodies and answers of the goals routes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from platform_server.ids import CONVERSATION_ID_PATTERN, NOT_BLANK_PATTERN
from platform_server.serialize import View
from platform_server.web.bodies import explained

MAX_CRITERIA = 50
NOT_BLANK = explained(NOT_BLANK_PATTERN, "must not be blank")  # service._title and _criteria strip what they keep
# A title or a criterion: 1-500 characters, not blank (the document's rule, checked here as stated)
Text = Annotated[str, Field(min_length=1, max_length=500, pattern=NOT_BLANK)]
# An agent id as text (ASCII digits) or as a JSON integer; strict, so a text that breaks the pattern is not read as one
AgentId = Annotated[str, Field(pattern="^[0-9]{1,18}$")] | Annotated[int, Field(strict=True)]
UPDATED = ("title", "criteria", "maxAttempts", "status")  # service.update: at least one of them, not null


def _not_null(schema: object) -> dict[str, object]:
    """A nullable field's schema without its null (nor its default): the value such a branch requires."""
    assert isinstance(schema, dict)  # a field's schema
    out = {k: v for k, v in schema.items() if k not in ("nullable", "default")}
    if isinstance(out.get("enum"), list):
        out["enum"] = [v for v in out["enum"] if v is not None]
    return out


class GoalCreate(BaseModel):
    conversationId: str = Field(json_schema_extra={"pattern": CONVERSATION_ID_PATTERN})  # conversations.validate_id
    agentId: AgentId
    title: Text
    criteria: list[Text] | None = Field(default=None, max_length=MAX_CRITERIA)
    maxAttempts: int | None = Field(default=None, ge=1, le=1000)  # evaluations before `exhausted`


class GoalUpdate(BaseModel):
    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        """At least one field given and not null (service.update refuses a body that changes nothing)."""
        properties = schema["properties"]
        assert isinstance(properties, dict)  # pydantic writes the model's fields there
        schema["anyOf"] = [{"required": [name], "properties": {name: _not_null(properties[name])}} for name in UPDATED]

    title: Text | None = None
    criteria: list[Text] | None = Field(default=None, max_length=MAX_CRITERIA)
    maxAttempts: int | None = Field(default=None, ge=1, le=1000)
    status: Literal["completed", "exhausted"] | None = None


class CriterionRequest(BaseModel):
    criterion: Text


class AbandonRequest(BaseModel):
    reason: str | None = Field(default=None, max_length=1000)


# ---- answers (web/openapi_answers.py): the dicts of service.to_dict / evaluation_dict / event_dict ----------------


class GoalEvaluationView(View):
    """The judge's verdict on one turn."""

    id: str
    messageId: str
    progress: int = Field(description="0-100")
    completed: bool
    blocked: bool
    reason: str
    model: str
    createTime: str | None


class GoalView(View):
    id: str
    workspaceId: str
    userId: str
    conversationId: str
    agentId: str | None
    title: str
    criteria: list[str]
    status: str
    maxAttempts: int | None = Field(description="evaluations before `exhausted`; null: the server's default")
    attempts: int
    lastEvaluation: GoalEvaluationView | None
    closedAt: str | None
    createTime: str | None
    updateTime: str | None


class GoalTitleChangeView(View):
    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from")
    to: str


class GoalAttemptsChangeView(View):
    model_config = ConfigDict(populate_by_name=True)

    from_: int | None = Field(alias="from")
    to: int


class GoalEventDetailView(View):
    """What changed, by event type: `created` {title, criteria}; `updated` and status changes {title, maxAttempts,
    status} as far as they changed; `criteria_updated` {from, to}; `criterion_added` {criterion, index};
    `evaluated` the verdict {progress, completed, blocked, reason, evaluationId, messageId, unreadable};
    a close by evaluation {reason, attempts, by}; `abandoned` {reason}."""

    model_config = ConfigDict(populate_by_name=True)

    title: str | GoalTitleChangeView | None = None
    criteria: list[str] | None = None
    maxAttempts: GoalAttemptsChangeView | None = None
    status: str | None = None
    from_: list[str] | None = Field(None, alias="from")
    to: list[str] | None = None
    criterion: str | None = None
    index: int | None = None
    progress: int | None = None
    completed: bool | None = None
    blocked: bool | None = None
    reason: str | None = None
    evaluationId: str | None = None
    messageId: str | None = None
    unreadable: bool | None = None
    attempts: int | None = None
    by: str | None = None


class GoalEventView(View):
    id: str
    goalId: str
    type: str
    fromStatus: str | None
    toStatus: str
    detail: GoalEventDetailView | None
    actorUserId: str | None
    createTime: str | None
