"""Request bodies and answers of the workspace routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from platform_server.serialize import View

Role = Literal["owner", "admin", "member", "viewer"]


class WorkspaceRequest(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)


class WorkspaceUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    # global admin only; the items are service.HOST_TOOLS (test_fuzz_findings), checked here so the document and the
    # server say the same
    hostTools: list[Literal["shell", "acp", "sql", "mcp_stdio", "network"]] | None = Field(default=None, max_length=10)


class MemberRequest(BaseModel):
    userId: int
    role: Role


class MemberRoleRequest(BaseModel):
    role: Role


class AccessView(View):
    workspaceId: str
    memberRole: str | None
    effectiveRole: str | None
    globalAdmin: bool
    isGlobalAdmin: bool
    capabilities: list[str]
    canRead: bool
    canWrite: bool
    canManage: bool
    canDelete: bool


class MemberRoleView(View):
    userId: str
    role: Role
