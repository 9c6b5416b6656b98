"""Request bodies of the auth routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from platform_server.date_time import parse_date_time
from platform_server.serialize import View
from platform_server.web.bodies import explained

USERNAME_PATTERN = explained(r"^[A-Za-z0-9_.@-]{3,64}$", "use 3 to 64 letters, digits, '.', '_', '@' or '-'")


class LoginRequest(BaseModel):
    username: str = Field(min_length=1, max_length=128)
    password: str = Field(min_length=1, max_length=256)


class CreateTokenRequest(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    expiresAt: str | None = Field(default=None, json_schema_extra={"format": "date-time", "example": "2026-12-31T23:59:59Z"})

    @field_validator("expiresAt")
    @classmethod
    def _iso(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_date_time(v)
            except ValueError:
                raise ValueError("must be an RFC 3339 date-time such as 2026-12-31T23:59:59Z")
        return v


class CreateUserRequest(BaseModel):
    username: str = Field(pattern=USERNAME_PATTERN)
    password: str = Field(min_length=8, max_length=256)
    nickname: str | None = Field(default=None, max_length=100)
    email: str | None = Field(default=None, max_length=200)
    role: Literal["admin", "user"] = "user"
    enabled: bool = True


class RoleRequest(BaseModel):
    role: Literal["admin", "user"]


class ResetPasswordRequest(BaseModel):
    newPassword: str = Field(min_length=8, max_length=256)


class LoginView(View):
    id: str
    token: str = Field(description="a JWT: send it as `Authorization: Bearer <token>`")
    username: str
    nickname: str
    role: str


class NewTokenView(View):
    """A new personal access token: `token` (the plaintext) is shown here only."""

    id: str
    name: str
    token: str
    tokenPrefix: str
    createTime: str | None
    expiresAt: str | None


class WorkspaceMemberView(View):
    """A workspace member with the user's names."""

    userId: str
    username: str
    nickname: str
    role: Literal["owner", "admin", "member", "viewer"]
    createTime: str | None


class WorkspaceMemberAddedView(View):
    userId: str
    username: str
    role: Literal["owner", "admin", "member", "viewer"]
