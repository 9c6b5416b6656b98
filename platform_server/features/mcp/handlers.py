"""The /api/v1/mcp/servers routes: servers are global (like tools): viewers read, a global admin changes."""

from __future__ import annotations

from typing import Any

from platform_server.features.mcp import MCP, service
from platform_server.features.mcp.manager import McpManager
from platform_server.features.mcp.models import McpServer
from platform_server.features.mcp.schemas import McpServerCreate, McpServerUpdate, McpTier, McpToggle
from platform_server.features.mcp.view_models import (
    McpServerView,
    McpTestView,
    McpToolView,
)
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route


class _McpBase(ApiHandler):
    tags = ("MCP servers",)

    @property
    def manager(self) -> McpManager:
        return self.platform.runtime(MCP)

    def present(self, row: McpServer) -> dict[str, Any]:
        return service.to_dict(row, self.manager.status(row))

    def present_id(self, server_id: int) -> dict[str, Any]:
        return self.present(service.get_row(server_id))


class ServersHandler(_McpBase):
    access = {"GET": "viewer", "POST": GLOBAL_ADMIN}
    answers = {"GET": list_of(McpServerView), "POST": one(McpServerView)}
    body_models = {"POST": McpServerCreate}

    def get(self) -> None:
        """Every MCP server with its connection status (header and env values masked)."""
        self.ok([self.present(r) for r in service.list_rows()])

    async def post(self) -> None:
        """Create an MCP server (global admin) and connect it; answers once the first attempt settled."""
        row = service.create(self.require_caller(), self.body(McpServerCreate))
        await self.manager.apply(int(row.id))
        self.ok(self.present_id(int(row.id)))


class RefreshHandler(_McpBase):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": list_of(McpServerView)}

    async def post(self) -> None:
        """Reconnect every enabled server and re-list its tools; answers the servers' states."""
        self.require_caller()
        await self.manager.refresh_all()
        self.ok([self.present(r) for r in service.list_rows()])


class ServerHandler(_McpBase):
    access = {"GET": "viewer", "PUT": GLOBAL_ADMIN, "DELETE": GLOBAL_ADMIN}
    answers = {"GET": one(McpServerView), "PUT": one(McpServerView), "DELETE": NOTHING}
    body_models = {"PUT": McpServerUpdate}

    def get(self, id: int) -> None:
        """One MCP server."""
        self.ok(self.present_id(id))

    async def put(self, id: int) -> None:
        """Update a server (sparse; name is fixed; `******` keeps a stored secret) and reconnect it."""
        service.update(self.require_caller(), id, self.body(McpServerUpdate))
        await self.manager.apply(id)
        self.ok(self.present_id(id))

    async def delete(self, id: int) -> None:
        """Delete a server and its tools; 409 when agents use its tools unless `force=true`."""
        caller = self.require_caller()
        service.check_delete(id, bool(self.query_bool("force")))
        await self.manager.disconnect(id)
        service.delete(caller, id)
        self.ok(None)


class ServerTestHandler(_McpBase):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": one(McpTestView)}

    async def post(self, id: int) -> None:
        """Connect, initialize and list tools on a one-off session: `{success, message, tools, latencyMs}`."""
        self.require_caller()
        self.ok(await self.manager.test(service.get_row(id)))


class ServerToggleHandler(_McpBase):
    access = {"PUT": GLOBAL_ADMIN}
    answers = {"PUT": one(McpServerView)}
    body_models = {"PUT": McpToggle}

    async def put(self, id: int) -> None:
        """Enable (connect) or disable (disconnect, its tools unregistered) a server."""
        req = self.toggle_body(McpToggle)
        service.toggle(self.require_caller(), id, req.enabled)
        await self.manager.apply(id)
        self.ok(self.present_id(id))


class ServerTierHandler(_McpBase):
    access = {"PUT": GLOBAL_ADMIN}
    answers = {"PUT": one(McpServerView)}
    body_models = {"PUT": McpTier}

    def put(self, id: int) -> None:
        """Set the disclosure tier (`core` or `extension`) of the server and all its tools."""
        req = self.body(McpTier)
        self.ok(self.present(service.set_tier(self.require_caller(), id, req.tier)))


class ServerToolsHandler(_McpBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(McpToolView)}

    def get(self, id: int) -> None:
        """Tools discovered on the server's last connection, with their registry names."""
        self.ok(service.tools_view(service.get_row(id), self.manager.registered()))


ROUTES = [
    route("/api/v1/mcp/servers", ServersHandler),
    route("/api/v1/mcp/servers/refresh", RefreshHandler),
    route("/api/v1/mcp/servers/{id}", ServerHandler),
    route("/api/v1/mcp/servers/{id}/test", ServerTestHandler),
    route("/api/v1/mcp/servers/{id}/toggle", ServerToggleHandler),
    route("/api/v1/mcp/servers/{id}/disclosure-tier", ServerTierHandler),
    route("/api/v1/mcp/servers/{id}/tools", ServerToolsHandler),
]
