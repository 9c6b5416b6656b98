"""What the guard routes answer (rules, configs, approvals, tool-call logs, grants): the API document's view models.

They only document (web/openapi_answers.py): the routes keep building plain dicts (`rules.to_dict`,
`grants.to_dict`, `views.tool_call_dict`, ...), and the test suite checks every answer against these models.
Severities and decisions are plain strings: the spec's lowercase values, or the original console's upper-case
ones when the request carries `X-Original-Console` (`views.for_original_console`, which adds `maxSeverity`).
"""

from __future__ import annotations

from pydantic import Field

from platform_server.serialize import View


class GuardRuleView(View):
    """A guard rule: a tool name and argument regexes that give a call a severity (and a decision)."""

    id: str
    ruleId: str
    name: str
    toolName: str
    argumentPatterns: dict[str, str] = Field(description="argument name -> regex")
    severity: str
    decision: str | None
    enabled: bool
    description: str
    builtin: bool
    createTime: str | None
    updateTime: str | None
    maxSeverity: str | None = Field(None, description="the console's name for severity (X-Original-Console)")


class GuardRulePageView(View):
    """The rules paged the way the original console asks for them (`page` given)."""

    records: list[GuardRuleView]
    total: int
    page: int
    size: int


class GuardRuleExportItemView(View):
    ruleId: str
    name: str
    toolName: str
    argumentPatterns: dict[str, str]
    severity: str
    decision: str | None
    enabled: bool
    description: str
    builtin: bool


class GuardRuleExportView(View):
    """Every rule as an importable document."""

    version: int
    exportedAt: str | None
    rules: list[GuardRuleExportItemView]


class GuardRuleImportPlanView(View):
    """What an import would do to one rule (dry run)."""

    ruleId: str
    action: str = Field(description="create or update")
    builtin: bool
    name: str | None
    toolName: str | None
    severity: str | None
    decision: str | None
    enabled: bool


class GuardRuleImportView(View):
    """Rules created and updated; a dry run (`dryRun` true) also lists the plan and writes nothing."""

    dryRun: bool | None = None
    created: int
    updated: int
    total: int
    rules: list[GuardRuleImportPlanView] | None = None


class GuardDecisionsView(View):
    """The decision (allow, ask, deny) per severity when no rule decides."""

    low: str
    medium: str
    high: str
    critical: str


class GuardConfigView(View):
    enabled: bool
    defaultDecisions: GuardDecisionsView


class FileGuardView(View):
    """Globs the file tools may never touch; `fileGuardEnabled` / `sensitivePaths` are the console's names."""

    enabled: bool
    patterns: list[str]
    fileGuardEnabled: bool
    sensitivePaths: list[str]


class GuardApprovalView(View):
    """A tool call that waited (or waits) for a person's approval."""

    pendingId: str
    toolCallId: str
    toolName: str
    arguments: str = Field(description="the call's arguments as JSON text")
    reason: str
    maxSeverity: str
    ruleId: str | None
    createTime: str | None
    expiresAt: str | None
    status: str = Field(description="pending, approved, denied or expired")
    conversationId: str
    userId: str | None
    agentId: str | None
    workspaceId: str
    assistantMessageId: str | None
    resolvedAt: str | None
    resolvedBy: str | None


class GuardMyApprovalView(GuardApprovalView):
    """A pending call in the caller's approvals inbox, with its conversation's title and source."""

    conversationTitle: str
    source: str | None


class GuardToolCallView(View):
    """A logged tool call with its guard decision, severity, duration and outcome."""

    id: str
    workspaceId: str
    userId: str | None
    agentId: str | None
    conversationId: str | None
    toolName: str
    arguments: str
    decision: str
    severity: str | None
    ruleId: str | None
    grantId: str | None
    success: bool
    durationMs: int | None
    resultPreview: str | None
    createTime: str | None
    maxSeverity: str | None = Field(None, description="the console's name for severity (X-Original-Console)")


class GuardDecisionCountsView(View):
    allow: int
    ask: int
    deny: int


class GuardSeverityCountsView(View):
    low: int
    medium: int
    high: int
    critical: int


class GuardAuditStatsView(View):
    """Tool-call counts of the workspace; `blocked`, `needsApproval`, `allowed` are the console's tiles."""

    total: int
    blocked: int
    needsApproval: int
    allowed: int
    failed: int
    successRate: float | None
    avgDurationMs: float | None
    byDecision: GuardDecisionCountsView
    byTool: dict[str, int] = Field(description="tool name -> calls")
    bySeverity: GuardSeverityCountsView
    since: str | None


class ApprovalGrantView(View):
    """A standing permission to run a tool (or a rule's calls) without asking, up to a severity."""

    id: str
    workspaceId: str
    scopeType: str = Field(description="USER, AGENT, CONVERSATION or WORKSPACE")
    scopeId: str
    toolName: str | None
    ruleId: str | None
    maxSeverity: str
    grantKind: str = Field(description="ALWAYS, UNTIL_TIMESTAMP or UNTIL_CONVERSATION_END")
    expireAt: str | None
    note: str | None
    createdBy: str | None
    createTime: str | None
    revoked: bool
    revokedAt: str | None
    revokedBy: str | None
    active: bool
    scopeName: str | None = Field(description="the scope's readable name (person, agent, conversation title)")
    createdByName: str | None


class ApprovalGrantScopeCountsView(View):
    USER: int
    AGENT: int
    CONVERSATION: int
    WORKSPACE: int


class ApprovalGrantKindCountsView(View):
    ALWAYS: int
    UNTIL_TIMESTAMP: int
    UNTIL_CONVERSATION_END: int


class ApprovalActiveGrantsView(View):
    total: int
    byScopeType: ApprovalGrantScopeCountsView
    byKind: ApprovalGrantKindCountsView


class ApprovalResolutionView(View):
    """The final decision on a tool call: manual, by grant, denied or expired."""

    id: str
    workspaceId: str
    userId: str | None
    agentId: str | None
    conversationId: str | None
    pendingId: str | None
    grantId: str | None
    toolName: str
    ruleId: str | None
    severity: str | None
    decision: str
    source: str
    actorUserId: str | None
    reason: str | None
    createTime: str | None
