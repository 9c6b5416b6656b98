"""Goals of the caller's conversations (viewer, like chat; the conversation's owner only)."""

from __future__ import annotations

from platform_server.features.goals import service
from platform_server.features.goals.schemas import AbandonRequest, CriterionRequest, GoalCreate, GoalEventView, GoalUpdate, GoalView
from platform_server.web.base import ApiHandler
from platform_server.web.openapi_answers import list_of, maybe, one
from platform_server.web.routing import route

TAGS = ("Goals",)


class GoalsHandler(ApiHandler):
    access = {"GET": "viewer", "POST": "viewer"}
    answers = {"GET": list_of(GoalView), "POST": one(GoalView)}
    body_models = {"POST": GoalCreate}
    query_params = {"GET": [{"name": "status", "in": "query", "schema": {"type": "string", "enum": list(service.STATUSES)}}]}
    tags = TAGS

    def get(self) -> None:
        """The caller's goals in the workspace, newest first, optionally of one status."""
        self.ok(service.list_goals(self.require_caller(), self.get_query_argument("status", None, strip=False)))

    def post(self) -> None:
        """Create a goal for one of the caller's conversations (one open goal per conversation)."""
        req = self.body(GoalCreate)
        self.ok(service.create(self.require_caller(), req))


class ByConversationHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": maybe(GoalView)}
    tags = TAGS

    def get(self, conversationId: str) -> None:
        """The conversation's open goal (active or paused), or null."""
        self.ok(service.by_conversation(self.require_caller(), conversationId))


class GoalHandler(ApiHandler):
    access = {"GET": "viewer", "PATCH": "viewer"}
    answers = {"GET": one(GoalView), "PATCH": one(GoalView)}
    body_models = {"PATCH": GoalUpdate}
    tags = TAGS

    def get(self, id: int) -> None:
        """One goal."""
        self.ok(service.get(self.require_caller(), id))

    def patch(self, id: int) -> None:
        """Sparse update (`title`, `criteria`, `status`: completed|exhausted) of a non-terminal goal."""
        req = self.body(GoalUpdate)
        self.ok(service.update(self.require_caller(), id, req))


class AbandonHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(GoalView)}
    body_models = {"POST": AbandonRequest}
    tags = TAGS

    def post(self, id: int) -> None:
        """Abandon an active or paused goal (terminal)."""
        req = self.body(AbandonRequest)
        self.ok(service.abandon(self.require_caller(), id, req.reason))


class CriteriaHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(GoalView)}
    body_models = {"POST": CriterionRequest}
    tags = TAGS

    def post(self, id: int) -> None:
        """Append a sub-criterion (`{criterion}`) to an active goal."""
        req = self.body(CriterionRequest)
        self.ok(service.add_criterion(self.require_caller(), id, req.criterion))


class EventsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(GoalEventView)}
    tags = TAGS

    def get(self, id: int) -> None:
        """Event timeline: every state and criteria change, oldest first."""
        self.ok(service.events(self.require_caller(), id))


class PauseHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(GoalView)}
    tags = TAGS

    def post(self, id: int) -> None:
        """Pause an active goal."""
        self.ok(service.pause(self.require_caller(), id))


class ResumeHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(GoalView)}
    tags = TAGS

    def post(self, id: int) -> None:
        """Resume a paused goal."""
        self.ok(service.resume(self.require_caller(), id))


ROUTES = [
    route("/api/v1/goals", GoalsHandler),
    route("/api/v1/goals/by-conversation/{conversationId:str}", ByConversationHandler),
    route("/api/v1/goals/{id}", GoalHandler),
    route("/api/v1/goals/{id}/abandon", AbandonHandler),
    route("/api/v1/goals/{id}/criteria", CriteriaHandler),
    route("/api/v1/goals/{id}/events", EventsHandler),
    route("/api/v1/goals/{id}/pause", PauseHandler),
    route("/api/v1/goals/{id}/resume", ResumeHandler),
]
