"""Workspaces, memberships and the role rules (owner > admin > member > viewer)."""

from __future__ import annotations

from typing import Any

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.workspaces.models import Workspace, WorkspaceMember
from platform_server.serialize import Fields, given, ident, typed, when
from platform_server.web.context import ROLE_RANK, Caller
from platform_server.web.errors import BadRequest, Conflict, Forbidden, NotFound

DEFAULT_WORKSPACE_ID = 1

# Tools that reach the host, which only a global admin enables, per workspace (`hostTools`):
HOST_TOOLS: dict[str, str] = {
    "shell": "shell_exec (and so skill scripts)",
    "acp": "acp_delegate (coding agents over ACP)",
    "sql": "SQLite datasources",
    "mcp_stdio": "tools of stdio MCP servers",
    "network": "network access inside this workspace's sandbox",
}

# The capability names the original console's router guard reads from /access; each role
# inherits the one below. Model provider writes need a global admin here, so workspace
# roles never carry manage:models.
_ROLE_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "viewer": ("chat", "view:wiki"),
    "member": ("view:memory", "view:dashboard", "manage:wiki", "manage:agents"),
    "admin": ("manage:skills", "manage:channels", "manage:security", "manage:settings"),
    "owner": (),
}


def capabilities(role: str | None, is_global_admin: bool) -> list[str]:
    """The console capability names a role grants (cumulative up the role ladder)."""
    rank = ROLE_RANK.get(role or "", 0)
    caps = [cap for name, caps in _ROLE_CAPABILITIES.items() if ROLE_RANK[name] <= rank for cap in caps]
    if is_global_admin:
        caps.append("manage:models")
    return caps


def member_role(user_id: int, workspace_id: int) -> str | None:
    """The user's membership role in a workspace, or None."""
    row = (
        WorkspaceMember.select(WorkspaceMember.role).where((WorkspaceMember.workspace == workspace_id) & (WorkspaceMember.user_id == user_id)).first()
    )
    return row.role if row else None


def add_membership(workspace_id: int, user_id: int, role: str) -> None:
    """Insert or update a membership (no checks: callers check)."""
    WorkspaceMember.insert(workspace=workspace_id, user_id=user_id, role=role).on_conflict(
        conflict_target=[WorkspaceMember.workspace, WorkspaceMember.user_id], update={WorkspaceMember.role: role}
    ).execute()


def effective_role(caller: Caller, workspace_id: int) -> str | None:
    return "owner" if caller.is_global_admin else member_role(caller.user_id, workspace_id)


def _get(workspace_id: int) -> Workspace:
    ws = Workspace.get_or_none(Workspace.id == workspace_id)
    if ws is None:
        raise NotFound("Workspace not found")
    return ws


def require_role(caller: Caller, workspace_id: int, role: str) -> tuple[Workspace, str]:
    """The workspace and the caller's effective role, or 404/403."""
    ws = _get(workspace_id)
    eff = effective_role(caller, workspace_id)
    if eff is None:
        raise Forbidden("Not a member of this workspace")
    if ROLE_RANK[eff] < ROLE_RANK[role]:
        raise Forbidden(f"Workspace role '{role}' required")
    return ws, eff


WORKSPACE_FIELDS = Fields(
    id=ident("id"),
    name=typed("name", str),
    description=typed("description", str | None),
    creatorUserId=ident("creator_user_id"),
    memberRole=given(str | None),
    effectiveRole=given(str | None),
    roleLevel=given(int),
    isGlobalAdmin=given(bool),
    hostTools=typed(lambda ws: [k for k in HOST_TOOLS if k in (ws.host_tools or [])], list[str]),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)
# `memberCount` only where the route counts members (one workspace, a new one)
WorkspaceView = WORKSPACE_FIELDS.view("WorkspaceView", memberCount=(int | None, None))


def to_dict(
    ws: Workspace,
    member: str | None,
    effective: str | None,
    member_count: int | None = None,
    is_global_admin: bool = False,
) -> dict[str, Any]:
    data = WORKSPACE_FIELDS(
        ws, memberRole=member, effectiveRole=effective, roleLevel=ROLE_RANK.get(effective or "", 0), isGlobalAdmin=is_global_admin
    )
    if member_count is not None:
        data["memberCount"] = member_count
    return data


def list_for(caller: Caller) -> list[dict[str, Any]]:
    """The caller's workspaces (every workspace for a global admin)."""
    roles = {m.workspace_id: m.role for m in WorkspaceMember.select().where(WorkspaceMember.user_id == caller.user_id)}
    q = Workspace.select().order_by(Workspace.id)
    if not caller.is_global_admin:
        q = q.where(Workspace.id.in_(list(roles) or [0]))
    admin = caller.is_global_admin
    return [to_dict(ws, roles.get(ws.id), "owner" if admin else roles.get(ws.id), is_global_admin=admin) for ws in q]


def get(caller: Caller, workspace_id: int) -> dict[str, Any]:
    ws, eff = require_role(caller, workspace_id, "viewer")
    count = WorkspaceMember.select().where(WorkspaceMember.workspace == ws.id).count()
    return to_dict(ws, member_role(caller.user_id, ws.id), eff, count, caller.is_global_admin)


def create(caller: Caller, name: str, description: str | None) -> dict[str, Any]:
    """Create a workspace; the creator becomes its owner."""
    with database.atomic():
        ws = Workspace.create(name=name, description=description or "", creator_user_id=caller.user_id)
        add_membership(ws.id, caller.user_id, "owner")
        audit.record(caller, "CREATE", "WORKSPACE", ws.id, f"workspace {name}", workspace_id=ws.id)
    return to_dict(ws, "owner", "owner", 1, caller.is_global_admin)


def host_tools(workspace_id: int) -> set[str]:
    """The host tools a global admin enabled in the workspace (empty for an unknown one)."""
    row = Workspace.select(Workspace.host_tools).where(Workspace.id == workspace_id).first()
    return set(row.host_tools or []) if row else set()


def host_tool_refusal(workspace_id: int, kind: str) -> str:
    """Why a host tool may not be bound or run in the workspace ('' when a global admin enabled it)."""
    if kind in host_tools(workspace_id):
        return ""
    return (
        f"Host tool '{kind}' ({HOST_TOOLS[kind]}) is not enabled in this workspace; "
        f'a global admin enables it with PUT /api/v1/workspaces/{workspace_id} {{"hostTools": ["{kind}", ...]}}'
    )


def _check_host_tools(caller: Caller, ws: Workspace, wanted: list[str]) -> list[str]:
    unknown = [k for k in wanted if k not in HOST_TOOLS]
    if unknown:
        raise BadRequest(f"hostTools: unknown value '{unknown[0][:50]}' (one of {', '.join(HOST_TOOLS)})")
    clean = [k for k in HOST_TOOLS if k in wanted]
    if set(clean) != set(ws.host_tools or []) and not caller.is_global_admin:
        raise Forbidden("Only a global admin may change hostTools (tools that run programs or reach the host)")
    return clean


def update(caller: Caller, workspace_id: int, name: str | None, description: str | None, host: list[str] | None = None) -> dict[str, Any]:
    ws, eff = require_role(caller, workspace_id, "admin")
    with database.atomic():
        if host is not None:
            ws.host_tools = _check_host_tools(caller, ws, host)
        if name is not None:
            ws.name = name
        if description is not None:
            ws.description = description
        ws.update_time = utcnow()
        ws.save()
        what = f"workspace {ws.name}" + (f", hostTools [{', '.join(ws.host_tools)}]" if host is not None else "")
        audit.record(caller, "UPDATE", "WORKSPACE", ws.id, what, workspace_id=ws.id)
    return to_dict(ws, member_role(caller.user_id, ws.id), eff, is_global_admin=caller.is_global_admin)


def delete(caller: Caller, workspace_id: int) -> None:
    ws, _ = require_role(caller, workspace_id, "owner")  # who may first: an outsider learns nothing of the workspace
    if workspace_id == DEFAULT_WORKSPACE_ID:
        raise Conflict("The default workspace cannot be deleted")  # which workspace it is, not the request's shape
    with database.atomic():
        ws.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "WORKSPACE", workspace_id, f"workspace {ws.name}", workspace_id=workspace_id)


def access(caller: Caller, workspace_id: int) -> dict[str, Any]:
    """What the caller may do in a workspace."""
    _get(workspace_id)
    member = member_role(caller.user_id, workspace_id)
    eff = "owner" if caller.is_global_admin else member
    rank = ROLE_RANK.get(eff or "", 0)
    return {
        "workspaceId": str(workspace_id),
        "memberRole": member,
        "effectiveRole": eff,
        "globalAdmin": caller.is_global_admin,
        "isGlobalAdmin": caller.is_global_admin,
        "capabilities": capabilities(eff, caller.is_global_admin),
        "canRead": rank >= 1,
        "canWrite": rank >= 2,
        "canManage": rank >= 3,
        "canDelete": rank >= 4,
    }


def _owner_count(workspace_id: int) -> int:
    return WorkspaceMember.select().where((WorkspaceMember.workspace == workspace_id) & (WorkspaceMember.role == "owner")).count()


def check_grant(eff: str, current: str | None, new: str | None) -> None:
    """Only an owner may grant owner or change/remove an owner."""
    if eff != "owner" and (new == "owner" or current == "owner"):
        raise Forbidden("Only an owner can grant or change the owner role")


def update_member(caller: Caller, workspace_id: int, user_id: int, role: str) -> dict[str, Any]:
    _, eff = require_role(caller, workspace_id, "admin")
    current = member_role(user_id, workspace_id)
    if current is None:
        raise NotFound("Member not found")
    check_grant(eff, current, role)
    with database.atomic():
        if current == "owner" and role != "owner" and _owner_count(workspace_id) <= 1:
            raise Conflict("The last owner cannot be demoted")  # the workspace's state, not the request's shape
        add_membership(workspace_id, user_id, role)
        audit.record(caller, "UPDATE", "WORKSPACE_MEMBER", user_id, f"role {current} -> {role}", workspace_id=workspace_id)
    return {"userId": str(user_id), "role": role}


def remove_member(caller: Caller, workspace_id: int, user_id: int) -> None:
    _, eff = require_role(caller, workspace_id, "admin")
    current = member_role(user_id, workspace_id)
    if current is None:
        raise NotFound("Member not found")
    check_grant(eff, current, None)
    with database.atomic():
        if current == "owner" and _owner_count(workspace_id) <= 1:
            raise Conflict("The last owner cannot be removed")
        WorkspaceMember.delete().where((WorkspaceMember.workspace == workspace_id) & (WorkspaceMember.user_id == user_id)).execute()
        audit.record(caller, "DELETE", "WORKSPACE_MEMBER", user_id, f"removed ({current})", workspace_id=workspace_id)
