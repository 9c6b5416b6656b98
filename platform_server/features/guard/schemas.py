"""Request bodies of the guard routes."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, RootModel, field_validator
from pydantic.json_schema import JsonDict

from platform_server.features.guard import settings
from platform_server.features.guard.view_models import GuardRulePageView, GuardRuleView
from platform_server.ids import NOT_BLANK_PATTERN, NOT_BLANK_RE, WHITESPACE
from platform_server.web.bodies import explained

Severity = Literal["low", "medium", "high", "critical"]


Decision = Literal["allow", "ask", "deny"]


# A rule's value rules, stated so a client (or a fuzzer) sends only what rules.validate_rule takes
RULE_ID_PATTERN = explained(r"^[a-z0-9][a-z0-9._-]{0,63}$", "a slug of lowercase letters, digits, '.', '_' or '-' (1-64, starting alnum)")
TOOL_NAME_PATTERN = explained(r"^(\*|[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127})$", "a tool name (letters, digits, _ . : -) or *")
# the spaces named (ids.NOT_BLANK_PATTERN): `\s` has U+FEFF to ECMA and not to pydantic's regex nor to strip()
NOT_BLANK = explained(NOT_BLANK_PATTERN, "must not be blank")
# Each argument's regex must compile (`format: regex`); the argument name is the tool's own key, any string
PATTERNS_SCHEMA: JsonDict = {
    "type": "object",
    "maxProperties": 10,
    "additionalProperties": {"type": "string", "format": "regex", "minLength": 1, "maxLength": 500},
}
# A critical rule always asks: `allow` is refused with it (rules._check_critical)
NOT_CRITICAL_ALLOW: JsonDict = {
    "not": {"required": ["severity", "decision"], "properties": {"severity": {"enum": ["critical"]}, "decision": {"enum": ["allow"]}}}
}


class RuleBody(BaseModel):
    """A sparse update: the fields given, each with the creation's rules."""

    model_config = ConfigDict(extra="forbid")
    ruleId: str | None = Field(default=None, pattern=RULE_ID_PATTERN)
    name: str | None = Field(default=None, min_length=1, max_length=100, pattern=NOT_BLANK)
    toolName: str | None = Field(default=None, pattern=TOOL_NAME_PATTERN)
    argumentPatterns: dict[str, str] | None = Field(default=None, json_schema_extra=PATTERNS_SCHEMA)
    severity: Severity | None = None
    decision: Decision | None = None
    enabled: bool | None = None
    description: str | None = Field(default=None, max_length=1000)


class RuleCreateBody(BaseModel):
    """A new custom rule: name, toolName and severity are required (rules.validate_rule)."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=NOT_CRITICAL_ALLOW)
    ruleId: str | None = Field(default=None, pattern=RULE_ID_PATTERN, description="generated from the name when absent")
    name: str = Field(min_length=1, max_length=100, pattern=NOT_BLANK)
    toolName: str = Field(pattern=TOOL_NAME_PATTERN)
    argumentPatterns: dict[str, str] | None = Field(default=None, json_schema_extra=PATTERNS_SCHEMA)
    severity: Severity
    decision: Decision | None = Field(default=None, description="null: the default decision for the severity")
    enabled: bool | None = None
    description: str | None = Field(default=None, max_length=1000)


class RuleImportItem(RuleBody):
    """One rule of an import: a custom rule (as created), or a built-in one's `{ruleId: "builtin.…", enabled}`; an
    export's entries carry their read-only fields too (ignored)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "anyOf": [
                {
                    "required": ["name", "toolName", "severity"],
                    # given, and not null: the nullable properties are for a built-in entry's branch
                    "properties": {"name": {"type": "string"}, "toolName": {"type": "string"}, "severity": {"type": "string"}},
                    **NOT_CRITICAL_ALLOW,
                },
                {"required": ["ruleId"], "properties": {"ruleId": {"type": "string", "pattern": "^builtin[.]"}}},
            ]
        },
    )
    ruleId: str | None = Field(default=None, pattern=r"^(builtin[.].{1,120}|[a-z0-9][a-z0-9._-]{0,63})$")
    id: str | int | None = None
    builtin: bool | None = None
    createTime: str | None = None
    updateTime: str | None = None


class ToggleBody(BaseModel):
    enabled: bool | None = None


class RulesImport(BaseModel):
    rules: list[RuleImportItem] = Field(max_length=500)


class DefaultDecisionsBody(BaseModel):
    """The decision per severity to change (the others stay); critical can never be allow."""

    model_config = ConfigDict(extra="forbid")
    low: Decision | None = None
    medium: Decision | None = None
    high: Decision | None = None
    critical: Literal["ask", "deny"] | None = None


class GuardConfigBody(BaseModel):
    enabled: bool | None = None
    defaultDecisions: DefaultDecisionsBody | None = None


# A glob: 1-200 characters, no control characters, not blank (settings.validate_pattern)
# (the spaces named as NOT_BLANK_PATTERN does: `\s` is another set to ECMA, to Python and to pydantic's Rust regex)
GLOB_PATTERN = explained(f"^[^\\x00-\\x1f]*[^{WHITESPACE}\\x00-\\x1f][^\\x00-\\x1f]*$", "must be a non-empty glob without control characters")


class FileGuardBody(BaseModel):
    # fileGuardEnabled / sensitivePathsJson (a JSON-encoded list): the original console's names
    enabled: bool | None = Field(default=None, validation_alias=AliasChoices("enabled", "fileGuardEnabled"))
    patterns: list[Annotated[str, Field(min_length=1, max_length=settings.MAX_PATTERN_LENGTH, pattern=GLOB_PATTERN)]] | None = Field(
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


# absent or null: only an UNTIL_TIMESTAMP grant expires at a time (grants.create)
NO_VALUE: JsonDict = {"nullable": True, "enum": [None]}


class GrantBody(BaseModel):
    # The kind's cross-field rules (grants.create checks them), stated so a client or a fuzzer sends only valid pairs:
    # a timestamp grant needs `expireAt`, a conversation-end grant a CONVERSATION scope.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"grantKind": {"enum": ["ALWAYS"]}, "expireAt": NO_VALUE}},
                {
                    "properties": {"grantKind": {"enum": ["UNTIL_TIMESTAMP"]}, "expireAt": {"type": "string", "format": "date-time"}},
                    "required": ["expireAt"],
                },
                {"properties": {"grantKind": {"enum": ["UNTIL_CONVERSATION_END"]}, "scopeType": {"enum": ["CONVERSATION"]}, "expireAt": NO_VALUE}},
            ]
        }
    )

    scopeType: Literal["USER", "AGENT", "CONVERSATION", "WORKSPACE"]
    # 1-128 characters, not blank (_scope_id: NOT_BLANK_PATTERN, the union of ECMA's and Python's spaces; `\S` let a
    # U+001C through, which Python's strip() then removed)
    scopeId: str | int = Field(
        json_schema_extra={
            "anyOf": [{"type": "string", "minLength": 1, "maxLength": 128, "pattern": NOT_BLANK_PATTERN}, {"type": "integer", "minimum": 0}]
        }
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
        text = str(value)
        if not NOT_BLANK_RE.search(text) or len(text) > 128:  # the document's rule, on the value as sent
            raise ValueError("must be 1-128 characters, not blank")
        return text.strip()


class GuardRulesView(RootModel[list[GuardRuleView] | GuardRulePageView]):
    """The rules answer: every rule, or with `page` a page of `records` (a union: here, with the other pydantic
    models, since a root model cannot be a `View`)."""
