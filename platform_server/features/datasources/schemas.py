"""Request bodies of the datasources routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from platform_server.serialize import View


class DatasourceCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    type: Literal["sqlite", "http"]
    description: str = Field(default="", max_length=2000)
    config: dict[str, Any]
    enabled: bool = True


class DatasourceUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str | None = Field(default=None, max_length=2000)
    config: dict[str, Any] | None = None
    enabled: bool | None = None


class ToggleRequest(BaseModel):
    enabled: bool


class DatasourceTestView(View):
    success: bool
    message: str
    latencyMs: int
