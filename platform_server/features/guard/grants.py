"""Approval grants: standing approvals by scope (user, agent, conversation, workspace), matched exactly."""

from __future__ import annotations

import datetime as dt
from typing import Any

import peewee

from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.auth.models import User
from platform_server.features.auth.service import acting_caller
from platform_server.features.conversations import service as conversations
from platform_server.features.conversations.models import Conversation
from platform_server.features.guard.models import ApprovalGrant, GuardRule
from platform_server.features.guard.settings import SEVERITY_RANK
from platform_server.features.workspaces.models import Workspace
from platform_server.features.workspaces.service import member_role
from platform_server.serialize import Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, Forbidden, NotFound
from platform_server.web.pagination import PageRequest, paginate, paginate_list

SCOPES = ("USER", "AGENT", "CONVERSATION", "WORKSPACE")
KINDS = ("ALWAYS", "UNTIL_TIMESTAMP", "UNTIL_CONVERSATION_END")
SCOPE_ORDER = {"CONVERSATION": 0, "AGENT": 1, "USER": 2, "WORKSPACE": 3}  # most specific first


def _conversation(user_id: int, conversation_id: str) -> Any:

    return conversations.find(user_id, conversation_id)


def _live(grant: ApprovalGrant, now: dt.datetime, conversation_pk: int | None) -> bool:
    """Not revoked, not expired, and (conversation scope) given for the conversation that exists now."""
    if grant.revoked:
        return False
    if grant.grant_kind == "UNTIL_TIMESTAMP" and (grant.expire_at is None or grant.expire_at <= now):
        return False
    if grant.scope_type == "CONVERSATION" and (conversation_pk is None or grant.conversation_pk != conversation_pk):
        return False
    return grant.grant_kind in KINDS


def _creator_is_admin(grant: ApprovalGrant, workspace_id: int) -> bool:
    """Whether the grant's creator is a workspace admin now (a global admin counts as owner)."""
    creator = acting_caller(int(grant.created_by), workspace_id) if grant.created_by is not None else None
    return creator is not None and creator.has_role("admin")


def _covers_user(grant: ApprovalGrant, user_id: int, workspace_id: int) -> bool:
    """A wildcard grant (any tool) covers another user's calls only while its creator is a workspace
    admin: an agent's creator cannot auto-approve every call the global admin makes with that agent."""
    if grant.tool_name is not None or grant.created_by == user_id:
        return True
    return _creator_is_admin(grant, workspace_id)


def matching_grant(
    workspace_id: int, user_id: int, agent_id: int, conversation_id: str, tool_name: str, rule_id: str | None, severity: str, now: dt.datetime
) -> ApprovalGrant | None:
    """The most specific active grant that covers this call exactly, or None (critical: always None)."""
    if severity not in SEVERITY_RANK or severity == "critical":
        return None
    scope = (
        ((ApprovalGrant.scope_type == "USER") & (ApprovalGrant.scope_id == str(user_id)))
        | ((ApprovalGrant.scope_type == "AGENT") & (ApprovalGrant.scope_id == str(agent_id)))
        | ((ApprovalGrant.scope_type == "CONVERSATION") & (ApprovalGrant.scope_id == conversation_id))
        | ((ApprovalGrant.scope_type == "WORKSPACE") & (ApprovalGrant.scope_id == str(workspace_id)))
    )
    tool_ok = ApprovalGrant.tool_name.is_null() | (ApprovalGrant.tool_name == tool_name)
    rule_ok = ApprovalGrant.rule_id.is_null()
    if rule_id is not None:
        rule_ok = rule_ok | (ApprovalGrant.rule_id == rule_id)
    rows = list(
        ApprovalGrant.select()
        .where(
            (ApprovalGrant.workspace_id == workspace_id)
            & (ApprovalGrant.revoked == False)  # noqa: E712
            & scope
            & tool_ok
            & rule_ok
        )
        .order_by(ApprovalGrant.create_time, ApprovalGrant.id)
    )
    if not rows:
        return None
    conv = _conversation(user_id, conversation_id) if any(g.scope_type == "CONVERSATION" for g in rows) else None
    conv_pk = conv.id if conv is not None and conv.user_id == user_id else None
    live = [
        g
        for g in rows
        if SEVERITY_RANK[severity] <= SEVERITY_RANK.get(g.max_severity, -1) and _live(g, now, conv_pk) and _covers_user(g, user_id, workspace_id)
    ]
    live.sort(key=lambda g: SCOPE_ORDER.get(g.scope_type, 9))
    return live[0] if live else None


# ---- the REST side ------------------------------------------------------------------------------


def is_active(grant: ApprovalGrant, now: dt.datetime | None = None) -> bool:
    moment = now or utcnow()
    if grant.revoked:
        return False
    if grant.grant_kind == "UNTIL_TIMESTAMP":
        return grant.expire_at is not None and grant.expire_at > moment
    if grant.scope_type == "CONVERSATION":
        return Conversation.select().where(Conversation.id == grant.conversation_pk).exists()
    return True


GRANT_FIELDS = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    scopeType="scope_type",
    scopeId="scope_id",
    toolName="tool_name",
    ruleId="rule_id",
    maxSeverity="max_severity",
    grantKind="grant_kind",
    expireAt=when("expire_at"),
    note="note",
    createdBy=ident("created_by"),
    createTime=when("create_time"),
    revoked=flag("revoked"),
    revokedAt=when("revoked_at"),
    revokedBy=ident("revoked_by"),
)


def to_dict(g: ApprovalGrant, now: dt.datetime | None = None) -> dict[str, Any]:
    return {**GRANT_FIELDS(g), "active": is_active(g, now), "scopeName": scope_name(g), "createdByName": _person(g.created_by)}


def _person(user_id: int | None) -> str | None:
    """A person's readable name (nickname, else username); None when there is no such user."""
    user = User.get_or_none(User.id == user_id) if user_id else None
    return (user.nickname or user.username) if user else None


def scope_name(g: ApprovalGrant) -> str | None:
    """Who or what the grant covers, in words a person reads (a grant lists show it instead of a raw id)."""
    if g.scope_type == "USER":
        return _person(int(g.scope_id)) if g.scope_id.isdigit() else None
    if g.scope_type == "AGENT":
        agent = Agent.get_or_none(Agent.id == int(g.scope_id)) if g.scope_id.isdigit() else None
        return agent.name if agent else None
    if g.scope_type == "CONVERSATION":
        conv = Conversation.get_or_none(Conversation.id == g.conversation_pk) if g.conversation_pk else None
        return conv.title if conv else None
    workspace = Workspace.get_or_none(Workspace.id == int(g.scope_id)) if g.scope_id.isdigit() else None
    return workspace.name if workspace else None


def _check_scope(caller: Caller, scope_type: str, scope_id: str) -> int | None:
    """Check the scope id exists in the caller's workspace; returns the conversation row id for CONVERSATION."""
    ws = caller.workspace_id
    if scope_type == "WORKSPACE":
        if not caller.has_role("admin"):
            raise Forbidden("Workspace role 'admin' required for a WORKSPACE grant")
        if scope_id != str(ws):  # the body names a workspace this request is not in: nothing here has that id
            raise NotFound("scopeId: not the current workspace's id")
        return None
    if scope_type == "CONVERSATION":
        conv = _conversation(caller.user_id, scope_id)
        if conv is None or conv.user_id != caller.user_id or conv.workspace_id != ws:
            raise NotFound("scopeId: not one of your conversations in this workspace")
        return conv.id
    if not (scope_id.isascii() and scope_id.isdigit() and len(scope_id) <= 18):  # the document takes any id text
        raise NotFound(f"scopeId: no {scope_type.lower()} of this workspace has that id")
    if scope_type == "USER":
        if member_role(int(scope_id), ws) is None:
            raise NotFound("scopeId: not a member of this workspace")
        if int(scope_id) != caller.user_id and not caller.has_role("admin"):
            raise Forbidden("Workspace role 'admin' required to grant for another user")
        return None

    agent = Agent.get_or_none((Agent.id == int(scope_id)) & (Agent.workspace_id == ws))
    if agent is None:
        raise NotFound("scopeId: not an agent of this workspace")
    if agent.creator_user_id != caller.user_id and not caller.has_role("admin"):
        raise Forbidden("Only the agent's creator or a workspace admin can grant for an agent")
    return None


def _check_wildcard(caller: Caller, scope_type: str, tool_name: str | None) -> None:
    """A grant for any tool that covers other users' calls (an agent's, the workspace's) needs a workspace admin."""
    if tool_name is None and scope_type in ("AGENT", "WORKSPACE") and not caller.has_role("admin"):
        raise Forbidden("Workspace role 'admin' required for an AGENT grant that covers every tool; name the tool (toolName)")


def create(
    caller: Caller,
    scope_type: str,
    scope_id: str,
    tool_name: str | None,
    rule_id: str | None,
    max_severity: str,
    grant_kind: str,
    expire_at: dt.datetime | None,
    note: str | None,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Create a grant after checking its scope, severity ceiling and kind."""
    moment = now or utcnow()
    if max_severity == "critical":
        raise BadRequest("maxSeverity: critical calls always ask; a grant cannot cover them")
    if grant_kind == "UNTIL_TIMESTAMP":
        if expire_at is None:
            raise BadRequest("expireAt: required for UNTIL_TIMESTAMP")
        if expire_at <= moment:  # well-formed, but the clock has passed it: a conflict with the present, not bad input
            raise Conflict("expireAt: must be in the future")
    elif expire_at is not None:
        raise BadRequest(f"expireAt: only UNTIL_TIMESTAMP grants expire at a time, not {grant_kind}")
    if grant_kind == "UNTIL_CONVERSATION_END" and scope_type != "CONVERSATION":
        raise BadRequest("grantKind: UNTIL_CONVERSATION_END needs scopeType CONVERSATION")
    conversation_pk = _check_scope(caller, scope_type, scope_id)
    _check_wildcard(caller, scope_type, tool_name)
    if rule_id is not None:
        if not GuardRule.select().where(GuardRule.rule_id == rule_id).exists():
            raise NotFound(f"ruleId: unknown rule '{rule_id}'")  # the rules stored decide, as the scope's do (404)
    grant = ApprovalGrant(
        workspace_id=caller.workspace_id,
        scope_type=scope_type,
        scope_id=scope_id,
        conversation_pk=conversation_pk,
        tool_name=tool_name,
        rule_id=rule_id,
        max_severity=max_severity,
        grant_kind=grant_kind,
        expire_at=expire_at,
        note=note or "",
        created_by=caller.user_id,
        create_time=moment,
    )
    audit.save(
        caller,
        "CREATE",
        "APPROVAL_GRANT",
        grant,
        f"{scope_type}:{scope_id} tool={tool_name or '*'} rule={rule_id or '*'} <= {max_severity} {grant_kind}",
    )
    return to_dict(grant, moment)


def _visible(caller: Caller) -> peewee.ModelSelect[ApprovalGrant]:
    return ApprovalGrant.select().where(ApprovalGrant.workspace_id == caller.workspace_id)


def page(caller: Caller, req: PageRequest, scope_type: str | None, tool_name: str | None, active: bool | None) -> dict[str, Any]:
    """The workspace's grants, newest first; `active` filters live ones (or revoked/expired ones)."""
    q = _visible(caller)
    if scope_type:
        q = q.where(ApprovalGrant.scope_type == scope_type.upper())
    if tool_name:
        q = q.where(ApprovalGrant.tool_name == tool_name)
    q = q.order_by(ApprovalGrant.create_time.desc(), ApprovalGrant.id.desc())
    if active is None:
        return paginate(q, req, to_dict)

    rows = [to_dict(g) for g in q]
    return paginate_list([g for g in rows if g["active"] == active], req)


def active_summary(caller: Caller) -> dict[str, Any]:
    """Counts of the workspace's active grants, by scope type and by kind."""
    now = utcnow()
    live = [g for g in _visible(caller).where(ApprovalGrant.revoked == False) if is_active(g, now)]  # noqa: E712
    by_scope = {s: 0 for s in SCOPES}
    by_kind = {k: 0 for k in KINDS}
    for g in live:
        by_scope[g.scope_type] = by_scope.get(g.scope_type, 0) + 1
        by_kind[g.grant_kind] = by_kind.get(g.grant_kind, 0) + 1
    return {"total": len(live), "byScopeType": by_scope, "byKind": by_kind}


def count_active(workspace_id: int) -> int:
    now = utcnow()
    rows = ApprovalGrant.select().where(
        (ApprovalGrant.workspace_id == workspace_id) & (ApprovalGrant.revoked == False)  # noqa: E712
    )
    return sum(1 for g in rows if is_active(g, now))


def revoke(caller: Caller, grant_id: int) -> dict[str, Any]:
    """Soft-revoke a grant of the workspace (its creator or a workspace admin)."""
    grant = _visible(caller).where(ApprovalGrant.id == grant_id).first()
    if grant is None:
        raise NotFound("Grant not found")
    if grant.created_by != caller.user_id and not caller.has_role("admin"):
        raise Forbidden("Only the grant's creator or a workspace admin can revoke it")
    if grant.revoked:
        return to_dict(grant)
    with database.atomic():
        grant.revoked, grant.revoked_at, grant.revoked_by = True, utcnow(), caller.user_id
        grant.save()
        audit.record(caller, "DELETE", "APPROVAL_GRANT", grant.id, f"revoked {grant.scope_type}:{grant.scope_id}")
    return to_dict(grant)
