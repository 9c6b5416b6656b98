"""Workspaces and member roles; the role check uses the path's workspace id (listing and adding members,
which read users, is in auth/members.py)."""

from __future__ import annotations

from platform_server.features.workspaces import service
from platform_server.features.workspaces.schemas import AccessView, MemberRoleRequest, MemberRoleView, WorkspaceRequest, WorkspaceUpdate
from platform_server.web.base import ApiHandler
from platform_server.web.context import LOGIN
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route


class WorkspacesHandler(ApiHandler):
    answers = {"GET": list_of(service.WorkspaceView), "POST": one(service.WorkspaceView)}
    access = {"GET": LOGIN, "POST": LOGIN}
    body_models = {"POST": WorkspaceRequest}
    tags = ("Workspaces",)

    def get(self) -> None:
        """The caller's workspaces with `memberRole` and `effectiveRole`."""
        self.ok(service.list_for(self.require_caller()))

    def post(self) -> None:
        """Create a workspace; the caller becomes owner."""
        req = self.body(WorkspaceRequest)
        self.ok(service.create(self.require_caller(), req.name, req.description))


class WorkspaceHandler(ApiHandler):
    answers = {"GET": one(service.WorkspaceView), "PUT": one(service.WorkspaceView), "DELETE": NOTHING}
    access = {"GET": LOGIN, "PUT": LOGIN, "DELETE": LOGIN}
    body_models = {"PUT": WorkspaceUpdate}
    tags = ("Workspaces",)

    def get(self, id: int) -> None:
        """One workspace (viewer)."""
        self.ok(service.get(self.require_caller(), id))

    def put(self, id: int) -> None:
        """Update name or description (admin); `hostTools` (tools that reach the host) only a global admin."""
        req = self.body(WorkspaceUpdate)
        host = None if req.hostTools is None else list[str](req.hostTools)
        self.ok(service.update(self.require_caller(), id, req.name, req.description, host))

    def delete(self, id: int) -> None:
        """Delete a workspace (owner); workspace 1 stays."""
        service.delete(self.require_caller(), id)
        self.ok(None)


class AccessHandler(ApiHandler):
    answers = {"GET": one(AccessView)}
    access = {"GET": LOGIN}
    tags = ("Workspaces",)

    def get(self, id: int) -> None:
        """The caller's access capability in the workspace."""
        self.ok(service.access(self.require_caller(), id))


class MemberHandler(ApiHandler):
    answers = {"PUT": one(MemberRoleView), "DELETE": NOTHING}
    access = {"PUT": LOGIN, "DELETE": LOGIN}
    body_models = {"PUT": MemberRoleRequest}
    tags = ("Workspaces",)

    def put(self, id: int, targetUserId: int) -> None:
        """Change a member's role (admin; the last owner stays)."""
        req = self.body(MemberRoleRequest)
        self.ok(service.update_member(self.require_caller(), id, targetUserId, req.role))

    def delete(self, id: int, targetUserId: int) -> None:
        """Remove a member (admin; the last owner stays)."""
        service.remove_member(self.require_caller(), id, targetUserId)
        self.ok(None)


ROUTES = [
    route("/api/v1/workspaces", WorkspacesHandler),
    route("/api/v1/workspaces/{id}", WorkspaceHandler),
    route("/api/v1/workspaces/{id}/access", AccessHandler),
    route("/api/v1/workspaces/{id}/members/{targetUserId}", MemberHandler),
]
