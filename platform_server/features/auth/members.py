"""Workspace members by name: the membership routes that read users live with the users (auth), so
the workspaces area never imports auth."""

from __future__ import annotations

from typing import Any

from platform_server.db import database, iso
from platform_server.features.audit import service as audit
from platform_server.features.auth.models import User
from platform_server.features.auth.schemas import WorkspaceMemberAddedView, WorkspaceMemberView
from platform_server.features.workspaces import service as workspaces
from platform_server.features.workspaces.models import WorkspaceMember
from platform_server.features.workspaces.schemas import MemberRequest
from platform_server.web.base import ApiHandler
from platform_server.web.context import LOGIN, Caller
from platform_server.web.errors import Conflict, NotFound
from platform_server.web.openapi_answers import list_of, one
from platform_server.web.routing import route


def members(caller: Caller, workspace_id: int) -> list[dict[str, Any]]:
    """Members of the workspace with their names (viewer)."""
    workspaces.require_role(caller, workspace_id, "viewer")
    rows = (
        WorkspaceMember.select(WorkspaceMember, User)
        .join(User, on=(WorkspaceMember.user_id == User.id))
        .where((WorkspaceMember.workspace == workspace_id) & (User.deleted == False))  # noqa: E712
        .order_by(WorkspaceMember.create_time)
    )
    return [
        {
            "userId": str(m.user_id),
            "username": m.user.username,
            "nickname": m.user.nickname,
            "role": m.role,
            "createTime": iso(m.create_time),
        }
        for m in rows
    ]


def add_member(caller: Caller, workspace_id: int, user_id: int, role: str) -> dict[str, Any]:
    """Add an existing user (admin; only an owner grants owner)."""
    _, eff = workspaces.require_role(caller, workspace_id, "admin")
    user = User.get_or_none((User.id == user_id) & (User.deleted == False))  # noqa: E712
    if user is None:
        raise NotFound("User not found")
    current = workspaces.member_role(user_id, workspace_id)
    if current is not None:
        raise Conflict("userId: already a member of this workspace")  # the workspace's state: a 409
    workspaces.check_grant(eff, current, role)
    with database.atomic():
        workspaces.add_membership(workspace_id, user_id, role)
        audit.record(caller, "CREATE", "WORKSPACE_MEMBER", user_id, f"{user.username} as {role}", workspace_id=workspace_id)
    return {"userId": str(user_id), "username": user.username, "role": role}


class MembersHandler(ApiHandler):
    answers = {"GET": list_of(WorkspaceMemberView), "POST": one(WorkspaceMemberAddedView)}
    access = {"GET": LOGIN, "POST": LOGIN}
    body_models = {"POST": MemberRequest}
    tags = ("Workspaces",)

    def get(self, id: int) -> None:
        """Members of the workspace (viewer)."""
        self.ok(members(self.require_caller(), id))

    def post(self, id: int) -> None:
        """Add a member (admin; only an owner grants owner)."""
        req = self.body(MemberRequest)
        self.ok(add_member(self.require_caller(), id, req.userId, req.role))


ROUTES = [route("/api/v1/workspaces/{id}/members", MembersHandler)]
