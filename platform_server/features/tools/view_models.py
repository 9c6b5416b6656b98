"""What the /api/v1/tools routes answer: the API document's view models (they only document; the routes keep
building plain dicts with `service.to_dict`, and the test suite checks every answer against these models)."""

from __future__ import annotations

from pydantic import Field, JsonValue

from platform_server.serialize import View


class ToolView(View):
    """A tool row: system, MCP or custom; `parameters` is the JSON schema the model sees, `config` its settings."""

    id: str
    name: str
    description: str
    source: str
    enabled: bool
    disclosureTier: str = Field(description="core or extension")
    parameters: dict[str, JsonValue] = Field(description="JSON schema of the tool's arguments")
    config: dict[str, JsonValue]
    createTime: str | None
    updateTime: str | None


class ToolWithHostView(ToolView):
    """A tool with its host-tool kind and whether the caller's workspace may run it."""

    hostTool: str | None = Field(description="the host-tool kind (shell, files, ...), null for other tools")
    workspaceEnabled: bool


class ToolAvailableView(View):
    """A tool an agent can bind now (enabled, registered, allowed in the workspace)."""

    id: str
    name: str
    description: str
    source: str
    disclosureTier: str
    parameters: dict[str, JsonValue]
    hostTool: str | None
    workspaceEnabled: bool
