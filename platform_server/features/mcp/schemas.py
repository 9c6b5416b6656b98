"""Request bodies of the MCP routes (`POST /api/v1/tools`, which exposes one MCP tool, is in tools/schemas.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from platform_server.web.bodies import explained

SERVER_NAME_PATTERN = explained(
    r"^[A-Za-z0-9][A-Za-z0-9_-]{0,23}$",
    "use up to 24 letters, digits, '_' or '-', starting with a letter or digit (no spaces: it begins each tool's name)",
)
MASK = "******"  # secret values (headers, env) as responses show them; sending it back keeps the stored value

Transport = Literal["streamable_http", "sse", "stdio"]
Tier = Literal["core", "extension"]


class McpServerCreate(BaseModel):
    name: str = Field(pattern=SERVER_NAME_PATTERN, description="Slug used in the server's tool names (immutable)")
    description: str = Field(default="", max_length=2000)
    transport: Transport
    url: str | None = Field(default=None, max_length=2048, description="streamable_http and sse: http(s) URL")
    headers: dict[str, str] | None = Field(default=None, description="streamable_http and sse; values are write-only")
    command: str | None = Field(default=None, max_length=1024, description="stdio: the executable")
    args: list[str] | None = Field(default=None, max_length=100)
    env: dict[str, str] | None = Field(default=None, description="stdio: extra environment; values are write-only")
    enabled: bool = True
    disclosureTier: Tier = "core"


class McpServerUpdate(BaseModel):
    name: str | None = Field(default=None, max_length=64)
    description: str | None = Field(default=None, max_length=2000)
    transport: Transport | None = None
    url: str | None = Field(default=None, max_length=2048)
    headers: dict[str, str] | None = None
    command: str | None = Field(default=None, max_length=1024)
    args: list[str] | None = Field(default=None, max_length=100)
    env: dict[str, str] | None = None
    enabled: bool | None = None


class McpToggle(BaseModel):
    enabled: bool | None = Field(default=None, description="Absent: flip (as every toggle; the body is optional)")


class McpTier(BaseModel):
    tier: Tier
