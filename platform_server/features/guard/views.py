"""Read views over the guard's logs: approvals, tool calls, their statistics, the activity feed and badges."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import peewee
import pydantic
from pydantic import Field

from platform_server.db import database, dict_row, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.audit.models import AuditEvent
from platform_server.features.conversations import service as conversations
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.guard import grants as grant_store
from platform_server.features.guard import service as guard
from platform_server.features.guard.models import ApprovalResolution, PendingApproval, ToolCallLog
from platform_server.features.guard.view_models import ApprovalResolutionView, GuardToolCallView
from platform_server.serialize import Fields, View, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Forbidden
from platform_server.web.pagination import PageRequest, page_of, paginate

PENDING_STATUSES = ("pending", "approved", "denied", "expired")
FEED_KINDS = ("audit", "approval", "tool_call")
DAY = dt.timedelta(hours=24)


resolution_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    userId=ident("user_id"),
    agentId=ident("agent_id"),
    conversationId="conversation_id",
    pendingId=ident("pending_id"),
    grantId=ident("grant_id"),
    toolName="tool_name",
    ruleId="rule_id",
    severity="severity",
    decision="decision",
    source="source",
    actorUserId=ident("actor_user_id"),
    reason="reason",
    createTime=when("create_time"),
)


tool_call_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    userId=ident("user_id"),
    agentId=ident("agent_id"),
    conversationId="conversation_id",
    toolName="tool_name",
    arguments="arguments",
    decision="decision",
    severity="severity",
    ruleId="rule_id",
    grantId=ident("grant_id"),
    success=flag("success"),
    durationMs="duration_ms",
    resultPreview="result_preview",
    createTime=when("create_time"),
)


# The original console's names for severities and decisions: it builds its label keys from them
# (`security.severity.HIGH`, `security.decision.NEEDS_APPROVAL`) and filters audit logs by them.
CONSOLE_SEVERITY = {"low": "LOW", "medium": "MEDIUM", "high": "HIGH", "critical": "CRITICAL"}
CONSOLE_DECISION = {"allow": "ALLOW", "ask": "NEEDS_APPROVAL", "deny": "BLOCK"}
DECISION_FROM_CONSOLE = {v: k for k, v in CONSOLE_DECISION.items()}


def decision_filter(value: str | None) -> str | None:
    """A decision filter in either vocabulary (`ask` or the console's `NEEDS_APPROVAL`)."""
    return DECISION_FROM_CONSOLE.get(value, value) if value else value


def for_original_console(row: dict[str, Any]) -> dict[str, Any]:
    """A rule or a logged call with the console's upper-case severity and decision (`maxSeverity` too)."""
    out = dict(row)
    if out.get("severity"):
        out["severity"] = out["maxSeverity"] = CONSOLE_SEVERITY.get(out["severity"], out["severity"])
    if out.get("decision"):
        out["decision"] = CONSOLE_DECISION.get(out["decision"], out["decision"])
    return out


# ---- chat and approvals -------------------------------------------------------------------------


def chat_pending(caller: Caller, conversation_id: str) -> list[dict[str, Any]]:
    """The caller's pending calls in their conversation (403 for another user's; unknown: none)."""

    conv = conversations.find(caller.user_id, conversation_id)
    if conv is not None and conv.user_id != caller.user_id:
        raise Forbidden("Not the owner of this conversation")
    return guard.pending_for(caller.user_id, conversation_id)


def approvals_page(caller: Caller, req: PageRequest, status: str | None) -> dict[str, Any]:
    """Every approval record of the workspace, newest first (admin view)."""
    if status is not None and status not in PENDING_STATUSES:  # the documented enum; empty is none of it
        raise BadRequest(f"status: must be one of {', '.join(PENDING_STATUSES)}")
    guard.expire_due(workspace_id=caller.workspace_id)
    q = PendingApproval.select().where(PendingApproval.workspace_id == caller.workspace_id)
    if status:
        q = q.where(PendingApproval.status == status)
    return paginate(q.order_by(PendingApproval.create_time.desc(), PendingApproval.id.desc()), req, guard.pending_dict)


def my_pending(caller: Caller) -> list[dict[str, Any]]:
    """The caller's own pending calls in the workspace, across conversations (cron runs included), oldest first.

    These are the calls the caller can resolve: `/approve` counts only from the conversation's owner.
    """

    guard.expire_due(workspace_id=caller.workspace_id, user_id=caller.user_id)
    rows = list(
        PendingApproval.select()
        .where(
            (PendingApproval.workspace_id == caller.workspace_id)
            & (PendingApproval.user_id == caller.user_id)
            & (PendingApproval.status == "pending")
        )
        .order_by(PendingApproval.create_time, PendingApproval.id)
    )
    ids = {r.conversation_id for r in rows}
    convs = {
        c.conversation_id: c
        for c in Conversation.select().where(
            (Conversation.conversation_id.in_(list(ids) or [""]))
            & (Conversation.user_id == caller.user_id)
            & (Conversation.workspace_id == caller.workspace_id)
        )
    }
    out = []
    for r in rows:
        conv = convs.get(r.conversation_id)
        out.append({**guard.pending_dict(r), "conversationTitle": conv.title if conv else "", "source": conv.source if conv else None})
    return out


def resolutions_page(caller: Caller, req: PageRequest, grant_id: int | None, conversation_id: str | None) -> dict[str, Any]:
    """The resolution log of the workspace (a non-admin sees their own conversations' decisions)."""
    q = ApprovalResolution.select().where(ApprovalResolution.workspace_id == caller.workspace_id)
    if not caller.has_role("admin"):
        q = q.where(ApprovalResolution.user_id == caller.user_id)
    if grant_id is not None:
        q = q.where(ApprovalResolution.grant_id == grant_id)
    if conversation_id:
        q = q.where(ApprovalResolution.conversation_id == conversation_id)
    q = q.order_by(ApprovalResolution.create_time.desc(), ApprovalResolution.id.desc())
    return paginate(q, req, resolution_dict)


# ---- tool-call audit ----------------------------------------------------------------------------


def _calls(caller: Caller, since: dt.datetime | None = None) -> peewee.ModelSelect[ToolCallLog]:
    q = ToolCallLog.select().where(ToolCallLog.workspace_id == caller.workspace_id)
    return q if since is None else q.where(ToolCallLog.create_time >= since)


def audit_logs(caller: Caller, req: PageRequest, tool_name: str | None, decision: str | None, success: bool | None) -> dict[str, Any]:
    """The workspace's tool calls, newest first; filters toolName, decision, success."""
    q = _calls(caller)
    if tool_name:
        q = q.where(ToolCallLog.tool_name == tool_name)
    if decision:
        q = q.where(ToolCallLog.decision == decision_filter(decision))
    if success is not None:
        q = q.where(ToolCallLog.success == success)
    return paginate(q.order_by(ToolCallLog.create_time.desc(), ToolCallLog.id.desc()), req, tool_call_dict)


def _group(q: peewee.ModelSelect[Any], field: peewee.Field) -> dict[str, int]:
    rows = q.select(field, peewee.fn.COUNT(ToolCallLog.id).alias("n")).group_by(field).order_by(field)
    return {str(getattr(r, field.name)): int(r.n) for r in rows}


def audit_stats(caller: Caller, days: int | None) -> dict[str, Any]:
    """Counts of the workspace's tool calls by decision, tool and severity, failures and mean duration."""
    since = utcnow() - dt.timedelta(days=days) if days else None
    q = _calls(caller, since)
    agg = dict_row(
        q.select(
            peewee.fn.COUNT(ToolCallLog.id).alias("total"),
            peewee.fn.SUM(peewee.Case(None, [(ToolCallLog.success == False, 1)], 0)).alias("failed"),  # noqa: E712
            peewee.fn.AVG(ToolCallLog.duration_ms).alias("avg"),
        )
    )
    total = agg["total"] or 0
    decisions = {"allow": 0, "ask": 0, "deny": 0, **_group(q, ToolCallLog.decision)}
    return {
        "total": total,
        # the original console's audit tiles: blocked, needs approval, allowed
        "blocked": decisions["deny"],
        "needsApproval": decisions["ask"],
        "allowed": decisions["allow"],
        "failed": agg["failed"] or 0,
        "successRate": round((total - (agg["failed"] or 0)) / total, 4) if total else None,
        "avgDurationMs": round(agg["avg"], 1) if agg["avg"] is not None else None,
        "byDecision": decisions,
        "byTool": _group(q, ToolCallLog.tool_name),
        "bySeverity": {"low": 0, "medium": 0, "high": 0, "critical": 0, **_group(q, ToolCallLog.severity)},
        "since": iso(since),
    }


# ---- activity feed and badges -------------------------------------------------------------------


def _feed_sources(caller: Caller, kinds: tuple[str, ...]) -> list[tuple[str, str, list[Any]]]:
    own = not caller.has_role("admin")
    ws = caller.workspace_id
    sources = {
        "audit": (AuditEvent._meta.table_name, "actor_user_id"),
        "approval": (ApprovalResolution._meta.table_name, "user_id"),
        "tool_call": (ToolCallLog._meta.table_name, "user_id"),
    }
    out = []
    for kind in kinds:
        table, user_col = sources[kind]
        where, params = "workspace_id = ?", [ws]
        if own:
            where += f" AND {user_col} = ?"
            params.append(caller.user_id)
        out.append((kind, f"SELECT '{kind}' AS kind, id, create_time FROM \"{table}\" WHERE {where}", params))
    return out


def _feed_item(kind: str, row: Any) -> dict[str, Any]:
    if kind == "audit":
        data = audit.to_dict(row)
        who = row.actor_username or "system"
        summary = f"{who} {row.action.lower()} {row.resource_type.lower()} {row.resource_id or ''}".strip()
    elif kind == "approval":
        data = resolution_dict(row)
        by = {"grant": "by grant", "manual": "by the owner", "expiry": "on expiry", "stop": "on stop"}
        summary = f"{row.tool_name} {row.decision} {by.get(row.source, row.source)}"
    else:
        data = tool_call_dict(row)
        outcome = "succeeded" if row.success else "failed"
        summary = f"{row.tool_name} {outcome} ({row.decision}, {row.duration_ms} ms)"
    item = {"kind": kind, "id": str(row.id), "time": data["createTime"], "summary": summary, "data": data}
    # the same event flat, as the original console's activity page reads it
    if kind == "audit":
        flat = {"action": row.action, "resourceType": row.resource_type, "resourceId": data["resourceId"], "username": row.actor_username}
    else:
        flat = {"action": str(row.decision).upper(), "resourceType": "TOOL", "resourceId": row.tool_name, "username": None}
    return {**item, **flat, "source": kind, "createTime": data["createTime"], "detail": data}


# what an activity line's `data` (and `detail`) is: the event as its own route answers it
_FEED_DETAIL: Any = audit.AuditEventView | ApprovalResolutionView | GuardToolCallView
_FEED_KIND: Any = (Literal["audit", "approval", "tool_call"], ...)
# One line of the activity feed (`_feed_item`); built here because the audit event's model is derived from its
# field map (a value, not a class mypy can name in an annotation).
ActivityItemView = pydantic.create_model(
    "ActivityItemView",
    __base__=View,
    __doc__="One line of the activity feed: an audit event, an approval decision or a tool call.",
    kind=_FEED_KIND,
    id=(str, ...),
    time=(str | None, ...),
    summary=(str, Field(description="one line a person reads")),
    data=(_FEED_DETAIL, ...),
    # the same event flat, as the original console's activity page reads it
    action=(str, ...),
    resourceType=(str, ...),
    resourceId=(str | None, ...),
    username=(str | None, ...),
    source=_FEED_KIND,
    createTime=(str | None, ...),
    detail=(_FEED_DETAIL, ...),
)


def activity_feed(caller: Caller, req: PageRequest, kind: str | None) -> dict[str, Any]:
    """Audit events, approval decisions and tool calls merged, newest first (non-admins: their own)."""
    if kind and kind not in FEED_KINDS:
        raise BadRequest(f"kind: must be one of {', '.join(FEED_KINDS)}")
    sources = _feed_sources(caller, (kind,) if kind else FEED_KINDS)
    union = " UNION ALL ".join(sql for _, sql, _ in sources)
    params = [p for _, _, ps in sources for p in ps]
    total = sum(database.execute_sql(f"SELECT COUNT(*) FROM ({sql})", ps).fetchone()[0] for _, sql, ps in sources)
    # a page past the last one is empty: not asked of SQLite, whose OFFSET holds 64 bits (page * size may not fit)
    rows = (
        database.execute_sql(
            f"SELECT kind, id FROM ({union}) ORDER BY create_time DESC, id DESC LIMIT ? OFFSET ?",
            [*params, req.size, req.offset],
        ).fetchall()
        if req.offset < total
        else []
    )
    models = {"audit": AuditEvent, "approval": ApprovalResolution, "tool_call": ToolCallLog}
    loaded: dict[tuple[str, int], Any] = {}
    for k, model in models.items():
        ids = [i for kk, i in rows if kk == k]
        if ids:
            loaded.update({(k, r.id): r for r in model.select().where(model.id.in_(ids))})
    items = [_feed_item(k, loaded[(k, i)]) for k, i in rows if (k, i) in loaded]
    return page_of(items, total, req)


class NotificationsSummaryView(View):
    """The sidebar badges' counts, from the caller's view of the workspace."""

    pendingApprovals: int = Field(description="the caller's own pending tool calls")
    workspacePendingApprovals: int | None = Field(description="every pending call of the workspace (admins); null for others")
    failedToolCalls24h: int
    deniedToolCalls24h: int
    failedMessages24h: int
    activeGrants: int
    total: int


def notifications_summary(caller: Caller) -> dict[str, Any]:
    """Counts for the sidebar badges, from the caller's view of the workspace."""

    now = utcnow()
    ws, admin = caller.workspace_id, caller.has_role("admin")
    pending = PendingApproval.select().where(
        (PendingApproval.workspace_id == ws) & (PendingApproval.status == "pending") & (PendingApproval.expires_at > now)
    )
    mine = pending.where(PendingApproval.user_id == caller.user_id).count()
    calls = _calls(caller, now - DAY)
    if not admin:
        calls = calls.where(ToolCallLog.user_id == caller.user_id)
    failed_calls = calls.where(ToolCallLog.success == False).count()  # noqa: E712
    denied_calls = calls.where(ToolCallLog.decision == "deny").count()
    failed_messages = (
        Message.select()
        .join(Conversation)
        .where(
            (Conversation.user_id == caller.user_id)
            & (Conversation.workspace_id == ws)
            & (Message.status == "failed")
            & (Message.create_time >= now - DAY)
        )
        .count()
    )
    return {
        "pendingApprovals": mine,
        "workspacePendingApprovals": pending.count() if admin else None,
        "failedToolCalls24h": failed_calls,
        "deniedToolCalls24h": denied_calls,
        "failedMessages24h": failed_messages,
        "activeGrants": grant_store.count_active(ws),
        "total": mine + failed_calls + failed_messages,
    }
