"""Request bodies of the guard routes."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, RootModel, field_validator

from platform_server.features.guard import settings
from platform_server.features.guard.view_models import GuardRulePageView, GuardRuleView

Severity = Literal["low", "medium", "high", "critical"]


Decision = Literal["allow", "ask", "deny"]


class RuleBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ruleId: str | None = None
    name: str | None = None
    toolName: str | None = None
    argumentPatterns: dict[str, str] | None = None
    severity: Severity | None = None
    decision: Decision | None = None
    enabled: bool | None = None
    description: str | None = None


class ToggleBody(BaseModel):
    enabled: bool | None = None


class RulesImport(BaseModel):
    rules: list[dict[str, Any]]


class GuardConfigBody(BaseModel):
    enabled: bool | None = None
    defaultDecisions: dict[str, Decision] | None = None


class FileGuardBody(BaseModel):
    # fileGuardEnabled / sensitivePathsJson (a JSON-encoded list): the original console's names
    enabled: bool | None = Field(default=None, validation_alias=AliasChoices("enabled", "fileGuardEnabled"))
    patterns: list[str] | None = Field(
        default=None, max_length=settings.MAX_PATTERNS, validation_alias=AliasChoices("patterns", "sensitivePathsJson")
    )

    @field_validator("patterns", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                raise ValueError("must be a list of glob patterns (or that list as JSON)")
        return value


class GrantBody(BaseModel):
    # The kind's cross-field rules (grants.create checks them), stated so a client or a fuzzer sends only valid pairs:
    # a timestamp grant needs `expireAt`, a conversation-end grant a CONVERSATION scope.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"grantKind": {"enum": ["ALWAYS"]}}},
                {
                    "properties": {"grantKind": {"enum": ["UNTIL_TIMESTAMP"]}, "expireAt": {"type": "string", "format": "date-time"}},
                    "required": ["expireAt"],
                },
                {"properties": {"grantKind": {"enum": ["UNTIL_CONVERSATION_END"]}, "scopeType": {"enum": ["CONVERSATION"]}}},
            ]
        }
    )

    scopeType: Literal["USER", "AGENT", "CONVERSATION", "WORKSPACE"]
    # 1-128 characters once stripped (_scope_id): a blank string is refused
    scopeId: str | int = Field(
        json_schema_extra={"anyOf": [{"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^\\s*\\S"}, {"type": "integer", "minimum": 0}]}
    )
    toolName: str | None = Field(default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]*$")
    ruleId: str | None = Field(default=None, min_length=1, max_length=64)
    # critical calls always ask: a grant cannot cover them (grants.create refuses it with its reason)
    maxSeverity: Severity = Field(json_schema_extra={"enum": ["low", "medium", "high"]})
    grantKind: Literal["ALWAYS", "UNTIL_TIMESTAMP", "UNTIL_CONVERSATION_END"]
    expireAt: str | None = None
    note: str | None = Field(default=None, max_length=500)

    @field_validator("scopeId")
    @classmethod
    def _scope_id(cls, value: str | int) -> str:
        text = str(value).strip()
        if not text or len(text) > 128:
            raise ValueError("must be 1-128 characters")
        return text


class GuardRulesView(RootModel[list[GuardRuleView] | GuardRulePageView]):
    """The rules answer: every rule, or with `page` a page of `records` (a union: here, with the other pydantic
    models, since a root model cannot be a `View`)."""
