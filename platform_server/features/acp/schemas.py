"""Request bodies of the ACP endpoint routes."""

from __future__ import annotations

from pydantic import BaseModel, Field

from platform_server.web.bodies import explained

NAME_PATTERN = explained(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", "use up to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
MASK = "******"  # env values as responses show them; sending it back keeps the stored value


class AcpCreate(BaseModel):
    name: str = Field(pattern=NAME_PATTERN)
    displayName: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=2000)
    command: str = Field(min_length=1, max_length=1024)
    args: list[str] = Field(default_factory=list, max_length=100)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str = Field(default="", max_length=1024, description="Working folder relative to <data_dir>/acp")
    enabled: bool = True


class AcpUpdate(BaseModel):
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    displayName: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    command: str | None = Field(default=None, min_length=1, max_length=1024)
    args: list[str] | None = Field(default=None, max_length=100)
    env: dict[str, str] | None = None
    cwd: str | None = Field(default=None, max_length=1024)
    enabled: bool | None = None


class AcpToggle(BaseModel):
    enabled: bool | None = Field(default=None, description="Absent: flip (as every toggle; the body is optional)")
