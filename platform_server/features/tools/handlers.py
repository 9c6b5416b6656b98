"""The /api/v1/tools routes: tools are global, so reading needs viewer and changing needs a global admin."""

from __future__ import annotations

from typing import Any

from platform_server.features.tools import TOOLS, lifecycle, service
from platform_server.features.tools.registry import ToolFactory
from platform_server.features.tools.schemas import McpToolCreate, ToolTier, ToolToggle, ToolUpdate
from platform_server.features.tools.view_models import (
    ToolAvailableView,
    ToolView,
    ToolWithHostView,
)
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.errors import ApiError
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route


class _ToolsBase(ApiHandler):
    tags = ("Tools",)

    def registered(self) -> set[str]:
        registry = self.platform.runtime(TOOLS)
        return set(registry.names()) if registry else set()

    def with_host(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows with `hostTool` and `workspaceEnabled` for the caller's workspace."""
        registry = self.platform.runtime(TOOLS)
        kinds = registry.host_kinds([r["name"] for r in rows]) if registry else {}
        return service.with_host(rows, kinds, self.require_caller().workspace_id, self.config.shell_exec_enabled)


class ToolsHandler(_ToolsBase):
    access = {"GET": "viewer", "POST": GLOBAL_ADMIN}
    answers = {"GET": list_of(ToolWithHostView), "POST": one(ToolView)}
    body_models = {"POST": McpToolCreate}

    def get(self) -> None:
        """Every tool (system, MCP, skills), system tools first, with `hostTool` and `workspaceEnabled`."""
        self.ok(self.with_host(service.list_all()))

    def post(self) -> None:
        """Create a tool that runs one discovered tool of an MCP server under its own name (global admin)."""
        req = self.body(McpToolCreate)
        create = self.platform.runtime(TOOLS).create_mcp_tool
        if create is None:
            raise ApiError("MCP is not running", 503)
        self.ok(service.to_dict(create(self.require_caller(), req)))


class AvailableToolsHandler(_ToolsBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(ToolAvailableView)}

    def get(self) -> None:
        """Every atomic tool an agent can bind here (enabled, runnable, host tools only where enabled), including MCP tools."""
        self.ok([r for r in self.with_host(service.list_available(self.registered())) if r["workspaceEnabled"]])


class EnabledToolsHandler(_ToolsBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(ToolWithHostView)}

    def get(self) -> None:
        """Enabled tools, with `hostTool` and `workspaceEnabled`."""
        self.ok(self.with_host(service.list_enabled()))


class ToolHandler(_ToolsBase):
    access = {"GET": "viewer", "PUT": GLOBAL_ADMIN, "DELETE": GLOBAL_ADMIN}
    answers = {"GET": one(ToolView), "PUT": one(ToolView), "DELETE": NOTHING}
    body_models = {"PUT": ToolUpdate}

    def get(self, id: int) -> None:
        """One tool."""
        self.ok(service.get(id))

    def put(self, id: int) -> None:
        """Update a tool's description, enabled flag or config (global admin)."""
        req = self.body(ToolUpdate)
        self.ok(service.update(self.require_caller(), id, req.description, req.enabled, req.config))

    def delete(self, id: int) -> None:
        """Delete a tool (global admin); system tools cannot be deleted."""
        name = service.delete(self.require_caller(), id)
        registry = self.platform.runtime(TOOLS)
        if registry is not None:
            registry.unregister(name)
        self.ok(None)


class ToolToggleHandler(_ToolsBase):
    access = {"PUT": GLOBAL_ADMIN}
    answers = {"PUT": one(ToolView)}
    body_models = {"PUT": ToolToggle}

    def put(self, id: int) -> None:
        """Enable or disable a tool (global admin)."""
        req = self.toggle_body(ToolToggle)
        self.ok(service.toggle(self.require_caller(), id, req.enabled))


class ToolTierHandler(_ToolsBase):
    access = {"PUT": GLOBAL_ADMIN}
    answers = {"PUT": one(ToolView)}
    body_models = {"PUT": ToolTier}

    def put(self, id: int) -> None:
        """Set the disclosure tier, `core` or `extension` (global admin)."""
        req = self.body(ToolTier)
        self.ok(service.set_tier(self.require_caller(), id, req.tier))


ROUTES = [
    route("/api/v1/tools", ToolsHandler),
    route("/api/v1/tools/available", AvailableToolsHandler),
    route("/api/v1/tools/enabled", EnabledToolsHandler),
    route("/api/v1/tools/{id}", ToolHandler),
    route("/api/v1/tools/{id}/toggle", ToolToggleHandler),
    route("/api/v1/tools/{id}/disclosure-tier", ToolTierHandler),
]

AGENT_TOOLS: list[ToolFactory] = [lifecycle.agent_tools]
