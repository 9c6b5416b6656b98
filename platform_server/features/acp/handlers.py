"""The /api/v1/acp/endpoints routes: endpoints are global and run commands on the host, so a global admin changes them."""

from __future__ import annotations

from platform_server.features.acp import launch, lifecycle, service
from platform_server.features.acp.schemas import AcpCreate, AcpToggle, AcpUpdate
from platform_server.features.acp.view_models import (
    AcpEndpointView,
    AcpTestView,
)
from platform_server.features.tools.registry import ToolFactory
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route


class _AcpBase(ApiHandler):
    tags = ("ACP endpoints",)


class EndpointsHandler(_AcpBase):
    access = {"GET": "viewer", "POST": GLOBAL_ADMIN}
    answers = {"GET": list_of(AcpEndpointView), "POST": one(AcpEndpointView)}
    body_models = {"POST": AcpCreate}

    def get(self) -> None:
        """Every ACP endpoint, built-ins first (env values masked)."""
        self.ok(service.list_all())

    def post(self) -> None:
        """Create a custom ACP endpoint (global admin)."""
        self.ok(service.create(self.require_caller(), self.body(AcpCreate)))


class EndpointHandler(_AcpBase):
    access = {"GET": "viewer", "PUT": GLOBAL_ADMIN, "DELETE": GLOBAL_ADMIN}
    answers = {"GET": one(AcpEndpointView), "PUT": one(AcpEndpointView), "DELETE": NOTHING}
    body_models = {"PUT": AcpUpdate}

    def get(self, id: int) -> None:
        """One ACP endpoint."""
        self.ok(service.to_dict(service.get_row(id)))

    def put(self, id: int) -> None:
        """Update an endpoint (sparse; built-ins keep their name; `******` keeps a stored env value)."""
        self.ok(service.update(self.require_caller(), id, self.body(AcpUpdate)))

    def delete(self, id: int) -> None:
        """Delete a custom endpoint; built-ins answer 400."""
        service.delete(self.require_caller(), id)
        self.ok(None)


class EndpointTestHandler(_AcpBase):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": one(AcpTestView)}

    async def post(self, id: int) -> None:
        """Spawn the agent (sandboxed, in the caller's workspace folder), do `initialize`: `{success, message, protocolVersion, latencyMs, ...}`."""
        caller = self.require_caller()
        row = service.get_row(id)
        result = await launch.test(self.config, row, caller.workspace_id)
        self.ok(service.record_test(int(row.id), result))


class EndpointToggleHandler(_AcpBase):
    access = {"PUT": GLOBAL_ADMIN}
    answers = {"PUT": one(AcpEndpointView)}
    body_models = {"PUT": AcpToggle}

    def put(self, id: int) -> None:
        """Enable or disable an endpoint."""
        req = self.toggle_body(AcpToggle)
        self.ok(service.toggle(self.require_caller(), id, req.enabled))


ROUTES = [
    route("/api/v1/acp/endpoints", EndpointsHandler),
    route("/api/v1/acp/endpoints/{id}", EndpointHandler),
    route("/api/v1/acp/endpoints/{id}/test", EndpointTestHandler),
    route("/api/v1/acp/endpoints/{id}/toggle", EndpointToggleHandler),
]

AGENT_TOOLS: list[ToolFactory] = [lifecycle.agent_tools]
