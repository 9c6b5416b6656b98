"""Agent templates: list the presets and create an agent from one."""

from __future__ import annotations

from platform_server.blocking import run_blocking
from platform_server.features.agents.schemas import AgentView
from platform_server.features.templates import service
from platform_server.features.templates.schemas import ApplyTemplate
from platform_server.features.templates.view_models import AgentTemplateView
from platform_server.web.base import ApiHandler
from platform_server.web.openapi_answers import list_of, one
from platform_server.web.routing import route


class TemplatesHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(AgentTemplateView)}
    tags = ("Agent templates",)

    def get(self) -> None:
        """The agent templates (built-in presets)."""
        self.require_caller()
        self.ok(service.list_templates())


class ApplyTemplateHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(AgentView)}
    body_models = {"POST": ApplyTemplate}
    tags = ("Agent templates",)

    async def post(self, id: int) -> None:
        """Create an agent in the caller's workspace from a template (optional `{name}`); returns the AgentEntity."""
        req = self.body(ApplyTemplate)
        agent, starter_files = service.apply(self.require_caller(), id, req.name)
        await run_blocking(service.write_files, self.config, int(agent["id"]), starter_files)
        self.ok(agent)


ROUTES = [
    route("/api/v1/templates", TemplatesHandler),
    route("/api/v1/templates/{id}/apply", ApplyTemplateHandler),
]
