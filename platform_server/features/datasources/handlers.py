"""Datasources of the workspace: viewer reads, workspace admin writes (they reach host resources)."""

from __future__ import annotations

from platform_server.features.datasources import service, tool
from platform_server.features.datasources.schemas import DatasourceCreate, DatasourceTestView, DatasourceUpdate, ToggleRequest
from platform_server.features.tools.registry import ToolFactory
from platform_server.web.base import ApiHandler
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route

TAGS = ("Datasources",)


class DatasourcesHandler(ApiHandler):
    answers = {"GET": list_of(service.DatasourceView), "POST": one(service.DatasourceView)}
    access = {"GET": "viewer", "POST": "admin"}
    body_models = {"POST": DatasourceCreate}
    tags = TAGS

    def get(self) -> None:
        """Datasources of the workspace (header values masked)."""
        self.ok(service.list_for(self.require_caller()))

    def post(self) -> None:
        """Create a SQLite or HTTP datasource (workspace admin)."""
        req = self.body(DatasourceCreate)
        self.ok(service.create(self.require_caller(), self.config, req.name, req.type, req.description, req.config_dict(), req.enabled))


class DatasourceHandler(ApiHandler):
    answers = {"GET": one(service.DatasourceView), "PUT": one(service.DatasourceView), "DELETE": NOTHING}
    access = {"GET": "viewer", "PUT": "admin", "DELETE": "admin"}
    body_models = {"PUT": DatasourceUpdate}
    tags = TAGS

    def get(self, id: int) -> None:
        """One datasource."""
        self.ok(service.get(self.require_caller(), id))

    def put(self, id: int) -> None:
        """Update (sparse; a masked header value keeps the stored one)."""
        changes = self.body(DatasourceUpdate).model_dump(exclude_none=True)
        self.ok(service.update(self.require_caller(), self.config, id, changes))

    def delete(self, id: int) -> None:
        """Delete."""
        service.delete(self.require_caller(), id)
        self.ok(None)


class TestHandler(ApiHandler):
    answers = {"POST": one(DatasourceTestView)}
    access = {"POST": "member"}
    tags = TAGS

    async def post(self, id: int) -> None:
        """Connect now: `{success, message, latencyMs}`."""
        self.ok(await service.test(self.require_caller(), self.config, id))


class ToggleHandler(ApiHandler):
    answers = {"PUT": one(service.DatasourceView)}
    access = {"PUT": "admin"}
    body_models = {"PUT": ToggleRequest}
    tags = TAGS

    def put(self, id: int) -> None:
        """Enable or disable (`{enabled}`, or `?enabled=`; neither flips it)."""
        req = self.toggle_body(ToggleRequest)
        self.ok(service.toggle(self.require_caller(), self.config, id, req.enabled))


ROUTES = [
    route("/api/v1/datasources", DatasourcesHandler),
    route("/api/v1/datasources/{id}", DatasourceHandler),
    route("/api/v1/datasources/{id}/test", TestHandler),
    route("/api/v1/datasources/{id}/toggle", ToggleHandler),
]

AGENT_TOOLS: list[ToolFactory] = [tool.agent_tools]
