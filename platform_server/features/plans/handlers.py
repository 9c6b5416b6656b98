"""Plans of plan-execute agents."""

from __future__ import annotations

from platform_server.features.plans import service
from platform_server.web.base import ApiHandler
from platform_server.web.openapi_answers import list_of, one
from platform_server.web.routing import route


class PlansHandler(ApiHandler):
    answers = {"GET": list_of(service.PlanView)}
    access = {"GET": "viewer"}
    tags = ("Plans",)
    query_params = {"GET": [{"name": "agentId", "in": "query", "required": True, "schema": {"type": "string"}}]}

    def get(self) -> None:
        """Plans of an agent (`agentId` required), newest first."""
        agent_id = self.query_long("agentId", required=True)
        assert agent_id is not None
        self.ok(service.list_for_agent(self.require_caller(), agent_id))


class PlanHandler(ApiHandler):
    answers = {"GET": one(service.PlanDetailView)}
    access = {"GET": "viewer"}
    tags = ("Plans",)

    def get(self, id: int) -> None:
        """A plan with its steps."""
        self.ok(service.get(self.require_caller(), id))


ROUTES = [route("/api/v1/plans", PlansHandler), route("/api/v1/plans/{id}", PlanHandler)]
