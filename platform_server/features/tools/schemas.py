"""Request bodies of the /api/v1/tools routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from platform_server.web.bodies import explained

FUNCTION_NAME_PATTERN = explained(
    r"^[A-Za-z0-9_-]{1,64}$", "use 1 to 64 letters, digits, '_' or '-' (no spaces: models call tools by this name)"
)  # what OpenAI and Anthropic accept as a function name


class ToolUpdate(BaseModel):
    description: str | None = Field(default=None, max_length=4000)
    enabled: bool | None = None
    config: dict[str, Any] | None = None


class ToolToggle(BaseModel):
    enabled: bool | None = Field(default=None, description="Absent: flip (as every toggle; the body is optional)")


class ToolTier(BaseModel):
    tier: Literal["core", "extension"]


class McpToolCreate(BaseModel):
    """`POST /api/v1/tools`: a named tool that runs one tool of an MCP server."""

    serverId: str = Field(pattern=r"^[0-9]{1,19}$")
    toolName: str = Field(min_length=1, max_length=256, description="The tool's name on the MCP server")
    name: str = Field(pattern=FUNCTION_NAME_PATTERN, description="The new tool's name (agents bind it)")
    description: str | None = Field(default=None, max_length=4000)
