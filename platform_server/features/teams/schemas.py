"""Request bodies of the teams routes."""

from __future__ import annotations

from pydantic import BaseModel, Field

from platform_server.features.teams import service


class TeamCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    leadAgentId: int
    memberAgentIds: list[int] = Field(max_length=service.MAX_MEMBERS)


class TeamUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    leadAgentId: int | None = None
    memberAgentIds: list[int] | None = Field(default=None, max_length=service.MAX_MEMBERS)


class TeamRunStart(BaseModel):
    goal: str = Field(min_length=1, max_length=20_000)


class CancelRequest(BaseModel):
    reason: str | None = Field(default=None, max_length=500)


class MemberAdd(BaseModel):
    agentId: int
    role: str = Field(default="member", max_length=20, json_schema_extra={"enum": ["lead", "member"]})  # console.ROLES
