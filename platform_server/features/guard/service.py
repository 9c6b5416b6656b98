"""The guard as the chat runtime calls it: evaluate a tool call, store and resolve pending approvals, log calls.

Every tool call of every path passes `evaluate`; an `ask` verdict becomes a `PendingApproval` that the
conversation's owner resolves with `/approve` or `/deny`. Every final decision on a call that needed
approval (manual, by grant, denied, expired, stopped) is one `ApprovalResolution` row.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from platform_server.db import database, utcnow
from platform_server.features.guard import grants as grant_store
from platform_server.features.guard import settings as guard_settings
from platform_server.features.guard.models import ApprovalResolution, GuardRule, PendingApproval, ToolCallLog
from platform_server.features.guard.settings import DECISION_RANK, FILE_TOOLS, SEVERITY_RANK
from platform_server.serialize import Fields, ident, when

FILE_GUARD_RULE_ID = "file-guard"
DEFAULT_APPROVAL_EXPIRY_S = 1800.0
MAX_ARGUMENT_TEXT = 20_000  # argument text a rule's regex looks at
_expiry = {"seconds": DEFAULT_APPROVAL_EXPIRY_S}  # set once from config at start (lifecycle.start)


@dataclass(frozen=True)
class GuardContext:
    user_id: int
    workspace_id: int
    agent_id: int
    conversation_id: str  # the public conversation id (pair with user_id: `default` is per user)


@dataclass(frozen=True)
class Verdict:
    decision: str  # allow | deny | ask
    severity: str  # low | medium | high | critical (of the matched rule; low when none matched)
    rule_id: str | None
    reason: str
    grant_id: int | None = None  # set when an active grant turned an "ask" into "allow"


ToolVerdictHook = Callable[[dict[str, Any], GuardContext], "Verdict | None"]
_tool_hooks: dict[str, ToolVerdictHook] = {}  # tool name -> the owning area's own check (set at start)


def register_tool_hook(tool_name: str, hook: ToolVerdictHook) -> None:
    """Let a tool's area decide `deny` or `ask` for its own calls (e.g. wiki page-type permissions)."""
    _tool_hooks[tool_name] = hook


def configure(approval_expiry_s: float) -> None:
    """Set how long a pending approval waits (config `approval_expiry_s`)."""
    _expiry["seconds"] = float(approval_expiry_s)


# ---- evaluation -------------------------------------------------------------------------------


def _argument_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text[:MAX_ARGUMENT_TEXT]


def rule_matches(rule: GuardRule, tool_name: str, arguments: dict[str, Any]) -> bool:
    """Exact tool name (or `*`), and every argument pattern found (re.search) in that argument's text."""
    if rule.tool_name not in (tool_name, "*"):
        return False
    for arg, pattern in (rule.argument_patterns or {}).items():
        if arg not in arguments or arguments[arg] is None:
            return False
        try:
            if re.search(pattern, _argument_text(arguments[arg])) is None:
                return False
        except re.error:
            return False
    return True


def _rule_decision(rule: GuardRule, defaults: dict[str, str]) -> str:
    decision = rule.decision or defaults.get(rule.severity, "ask")
    if rule.severity == "critical" and decision == "allow":
        return "ask"  # critical always asks
    return decision


def _file_guard_verdict(tool_name: str, arguments: dict[str, Any]) -> Verdict | None:
    if tool_name not in FILE_TOOLS:
        return None
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return None
    fg = guard_settings.get_file_guard()
    if not fg["enabled"]:
        return None
    pattern = guard_settings.protected_by(path, fg["patterns"])
    if pattern is None:
        return None
    return Verdict("deny", "critical", FILE_GUARD_RULE_ID, f"{tool_name} on '{path[:200]}' is blocked by the file guard (pattern {pattern})")


def evaluate(tool_name: str, arguments: dict[str, Any], ctx: GuardContext, now: dt.datetime | None = None) -> Verdict:
    """The guard's verdict on one tool call; an applied grant writes its resolution row."""
    args = arguments if isinstance(arguments, dict) else {}
    file_verdict = _file_guard_verdict(tool_name, args)
    if file_verdict is not None:
        return file_verdict
    hook = _tool_hooks.get(tool_name)
    own = hook(args, ctx) if hook is not None else None
    if own is not None and own.decision == "deny":
        return own
    config = guard_settings.get_config()
    if not config["enabled"]:
        return own or Verdict("allow", "low", None, "the tool guard is disabled")
    defaults = config["defaultDecisions"]
    best: tuple[int, int, GuardRule] | None = None
    rules = GuardRule.select().where((GuardRule.enabled == True) & GuardRule.tool_name.in_([tool_name, "*"]))  # noqa: E712
    for rule in rules.order_by(GuardRule.builtin, GuardRule.id):
        if not rule_matches(rule, tool_name, args):
            continue
        key = (SEVERITY_RANK.get(rule.severity, 0), DECISION_RANK.get(_rule_decision(rule, defaults), 1))
        if best is None or key > best[:2]:
            best = (key[0], key[1], rule)
    if best is None:
        decision = defaults.get("low", "allow")
        if own is not None and own.decision == "ask" and decision == "allow":
            return own
        return Verdict(decision, "low", None, f"{tool_name}: no rule matched, default for low is {decision}")
    rule = best[2]
    decision = _rule_decision(rule, defaults)
    if own is not None and own.decision == "ask" and decision == "allow":
        return own
    words = {"allow": "is allowed", "ask": "requires approval", "deny": "is denied"}[decision]
    verdict = Verdict(decision, rule.severity, rule.rule_id, f"{tool_name} {words} (rule {rule.rule_id})")
    if decision != "ask" or rule.severity == "critical":
        return verdict
    grant = grant_store.matching_grant(
        ctx.workspace_id, ctx.user_id, ctx.agent_id, ctx.conversation_id, tool_name, rule.rule_id, rule.severity, now or utcnow()
    )
    if grant is None:
        return verdict
    reason = f"{tool_name} auto-approved by grant {grant.id} (rule {rule.rule_id})"
    with database.atomic():
        _resolution(
            ctx.workspace_id,
            ctx.user_id,
            ctx.agent_id,
            ctx.conversation_id,
            tool_name,
            rule.rule_id,
            rule.severity,
            "approved",
            "grant",
            None,
            reason,
            grant_id=grant.id,
        )
    return Verdict("allow", rule.severity, rule.rule_id, reason, grant_id=grant.id)


# ---- pending approvals and the resolution log ------------------------------------------------


def _resolution(
    workspace_id: int,
    user_id: int,
    agent_id: int | None,
    conversation_id: str,
    tool_name: str,
    rule_id: str | None,
    severity: str,
    decision: str,
    source: str,
    actor: int | None,
    reason: str,
    pending_id: int | None = None,
    grant_id: int | None = None,
    now: dt.datetime | None = None,
) -> None:
    ApprovalResolution.create(
        workspace_id=workspace_id,
        user_id=user_id,
        agent_id=agent_id,
        conversation_id=conversation_id,
        pending_id=pending_id,
        grant_id=grant_id,
        tool_name=tool_name,
        rule_id=rule_id,
        severity=severity,
        decision=decision,
        source=source,
        actor_user_id=actor,
        reason=reason[:1000],
        create_time=now or utcnow(),
    )


pending_dict = Fields(
    pendingId=ident("id"),
    toolCallId="tool_call_id",
    toolName="tool_name",
    arguments="arguments",
    reason="reason",
    maxSeverity="severity",
    ruleId="rule_id",
    createTime=when("create_time"),
    expiresAt=when("expires_at"),
    status="status",
    conversationId="conversation_id",
    userId=ident("user_id"),
    agentId=ident("agent_id"),
    workspaceId=ident("workspace_id"),
    assistantMessageId=ident("assistant_message_id"),
    resolvedAt=when("resolved_at"),
    resolvedBy=ident("resolved_by"),
)


def create_pending(
    ctx: GuardContext,
    tool_call_id: str,
    tool_name: str,
    arguments_json: str,
    verdict: Verdict,
    assistant_message_id: int | None,
    now: dt.datetime | None = None,
    expiry_s: float | None = None,
) -> dict[str, Any]:
    """Store a pending approval (status `pending`, expiring after `approval_expiry_s`)."""
    created = now or utcnow()
    seconds = _expiry["seconds"] if expiry_s is None else expiry_s
    with database.atomic():
        row = PendingApproval.create(
            workspace_id=ctx.workspace_id,
            user_id=ctx.user_id,
            agent_id=ctx.agent_id,
            conversation_id=ctx.conversation_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            arguments=arguments_json,
            reason=verdict.reason,
            severity=verdict.severity,
            rule_id=verdict.rule_id,
            assistant_message_id=assistant_message_id,
            status="pending",
            create_time=created,
            expires_at=created + dt.timedelta(seconds=seconds),
        )
    return pending_dict(row)


def _finish(row: PendingApproval, status: str, source: str, actor: int | None, reason: str, now: dt.datetime) -> bool:
    """Move one pending row to its final status and log it; False when someone else resolved it first."""
    changed = (
        PendingApproval.update(status=status, resolved_at=now, resolved_by=actor)
        .where((PendingApproval.id == row.id) & (PendingApproval.status == "pending"))
        .execute()
    )
    if not changed:
        return False
    row.status, row.resolved_at, row.resolved_by = status, now, actor
    _resolution(
        row.workspace_id,
        row.user_id,
        row.agent_id,
        row.conversation_id,
        row.tool_name,
        row.rule_id,
        row.severity,
        status,
        source,
        actor,
        reason,
        pending_id=row.id,
        now=now,
    )
    return True


def expire_due(
    now: dt.datetime | None = None, workspace_id: int | None = None, user_id: int | None = None, conversation_id: str | None = None
) -> int:
    """Mark pending approvals past their expiry `expired` (with a resolution row each)."""
    moment = now or utcnow()
    q = PendingApproval.select().where((PendingApproval.status == "pending") & (PendingApproval.expires_at <= moment))
    if workspace_id is not None:
        q = q.where(PendingApproval.workspace_id == workspace_id)
    if user_id is not None:
        q = q.where(PendingApproval.user_id == user_id)
    if conversation_id is not None:
        q = q.where(PendingApproval.conversation_id == conversation_id)
    count = 0
    with database.atomic():
        for row in q:
            count += _finish(row, "expired", "expiry", None, f"{row.tool_name}: approval expired", moment)
    return count


def _pending_query(user_id: int, conversation_id: str) -> Any:
    return (
        PendingApproval.select()
        .where((PendingApproval.user_id == user_id) & (PendingApproval.conversation_id == conversation_id) & (PendingApproval.status == "pending"))
        .order_by(PendingApproval.create_time, PendingApproval.id)
    )


def pending_for(user_id: int, conversation_id: str, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """The user's still-pending calls in a conversation, oldest first (expired ones are marked first)."""
    moment = now or utcnow()
    expire_due(moment, user_id=user_id, conversation_id=conversation_id)
    return [pending_dict(p) for p in _pending_query(user_id, conversation_id)]


def resolve_oldest(
    user_id: int, conversation_id: str, decision: str, actor_user_id: int, now: dt.datetime | None = None, note: str | None = None
) -> dict[str, Any] | None:
    """Approve or deny the oldest pending call of the owner's conversation; None when nothing is pending.

    Only the owner resolves: `actor_user_id` must be `user_id`, which must be the pending row's user.
    `note` replaces the logged reason (an approval refused for the approver's role).
    """
    if decision not in ("approved", "denied"):
        raise ValueError(f"decision must be approved or denied, not {decision!r}")
    if int(actor_user_id) != int(user_id):
        return None
    moment = now or utcnow()
    expire_due(moment, user_id=user_id, conversation_id=conversation_id)
    with database.atomic():
        for row in _pending_query(user_id, conversation_id):
            verb = "approved" if decision == "approved" else "denied"
            if _finish(row, decision, "manual", actor_user_id, note or f"{row.tool_name} {verb} by the owner", moment):
                return pending_dict(row)
    return None


def deny_all_pending(user_id: int, conversation_id: str, actor_user_id: int, reason: str = "stopped", now: dt.datetime | None = None) -> int:
    """Deny every pending call of the conversation (stop, delete); returns how many."""
    moment = now or utcnow()
    expire_due(moment, user_id=user_id, conversation_id=conversation_id)
    count = 0
    with database.atomic():
        for row in _pending_query(user_id, conversation_id):
            count += _finish(row, "denied", "stop", actor_user_id, f"{row.tool_name} denied: {reason}", moment)
    return count


# ---- the tool-call log -----------------------------------------------------------------------


def record_tool_call(
    ctx: GuardContext,
    tool_name: str,
    arguments_json: str,
    verdict: Verdict,
    success: bool,
    duration_ms: int,
    result_preview: str,
    now: dt.datetime | None = None,
) -> None:
    """Log one tool call (allowed, approved or refused) for the audit views and the activity feed."""
    with database.atomic():
        ToolCallLog.create(
            workspace_id=ctx.workspace_id,
            user_id=ctx.user_id,
            agent_id=ctx.agent_id,
            conversation_id=ctx.conversation_id,
            tool_name=tool_name,
            arguments=(arguments_json or "")[:4000],
            decision=verdict.decision,
            severity=verdict.severity,
            rule_id=verdict.rule_id,
            grant_id=verdict.grant_id,
            success=bool(success),
            duration_ms=max(0, int(duration_ms)),
            result_preview=(result_preview or "")[:500],
            create_time=now or utcnow(),
        )


__all__ = [
    "GuardContext",
    "Verdict",
    "evaluate",
    "create_pending",
    "pending_for",
    "resolve_oldest",
    "deny_all_pending",
    "record_tool_call",
    "expire_due",
    "configure",
    "pending_dict",
    "rule_matches",
]
