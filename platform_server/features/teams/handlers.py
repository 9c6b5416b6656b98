"""Team runs (since 2.1.0): read, cancel (admin), list per team and per lead conversation; teams themselves."""

from __future__ import annotations

from typing import Any

from platform_server.features.teams import TEAMS, console, lifecycle, runner, service
from platform_server.features.teams.schemas import (
    BOARD_EVENTS,
    CancelRequest,
    MemberAdd,
    TeamCreate,
    TeamDetailView,
    TeamListedView,
    TeamRunsPageView,
    TeamRunStart,
    TeamRunView,
    TeamTaskStatsView,
    TeamTaskView,
    TeamUpdate,
    TeamView,
)
from platform_server.features.tools.registry import ToolFactory
from platform_server.platform import Flag
from platform_server.web.base import ApiHandler
from platform_server.web.errors import BadRequest, invalid_long, is_integer_text
from platform_server.web.live import LiveFeedHandler
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import gated, route

TAGS = ("Team runs",)
MAX_PAGE = 100
ACTIVE_ONLY = {"name": "activeOnly", "in": "query", "required": False, "schema": {"type": "boolean"}}
CURSOR = [
    # a run id (the previous page's nextCursor); empty or absent: the first page
    {"name": "cursor", "in": "query", "required": False, "schema": {"type": "string", "pattern": "^[0-9]{0,18}$"}},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}},
]


class CursorMixin(ApiHandler):
    def cursor_args(self) -> tuple[int | None, int]:
        """The documented cursor and limit, as written (no stripping: " 12" is neither; an empty limit is no integer)."""
        raw_cursor = self.get_query_argument("cursor", None, strip=False) or None
        if raw_cursor is not None and not (raw_cursor.isascii() and raw_cursor.isdigit() and len(raw_cursor) <= 18):
            raise invalid_long("cursor")
        cursor = int(raw_cursor) if raw_cursor else None
        raw = self.get_query_argument("limit", None, strip=False)
        if raw is not None and not is_integer_text(raw):
            raise BadRequest("Invalid value for parameter 'limit': expected Integer")
        limit = int(raw) if raw is not None else service.PAGE_DEFAULT
        if limit < 1:
            raise BadRequest("limit: must be greater than or equal to 1")
        return cursor, min(limit, MAX_PAGE)


class TeamRunHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(TeamRunView)}
    tags = TAGS

    def get(self, runId: int) -> None:
        """One team run with its member tasks."""
        self.ok(service.get_run(self.require_caller(), runId))


class TeamRunCancelHandler(ApiHandler):
    access = {"POST": "admin"}
    answers = {"POST": one(TeamRunView)}
    body_models = {"POST": CancelRequest}
    tags = TAGS

    def post(self, runId: int) -> None:
        """Cancel an active run with an optional `{reason}` (workspace admin; 409 once it ended)."""
        req = self.body(CancelRequest)
        self.ok(self.platform.runtime(TEAMS).cancel(self.require_caller(), runId, req.reason))


class TeamRunsHandler(ApiHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(TeamRunView), "POST": one(TeamRunView)}
    body_models = {"POST": TeamRunStart}
    tags = TAGS
    query_params = {"GET": [ACTIVE_ONLY]}

    def get(self, teamId: int) -> None:
        """The team's runs, newest first (at most 100; `activeOnly` keeps the unfinished ones)."""
        self.ok(service.team_runs(self.require_caller(), teamId, bool(self.query_bool("activeOnly"))))

    def post(self, teamId: int) -> None:
        """Start a team run on `{goal}` in the background, linked to no conversation (extension route)."""
        req = self.body(TeamRunStart)
        caller = self.require_caller()
        team = service.get_team_row(caller, teamId)
        run = self.platform.runtime(TEAMS).start(caller, team, runner.check_goal(req.goal))
        self.ok(service.run_dict(run))


class TeamRunsPageHandler(CursorMixin):
    access = {"GET": "viewer"}
    answers = {"GET": one(TeamRunsPageView)}
    tags = TAGS
    query_params = {"GET": [ACTIVE_ONLY, *CURSOR]}

    def get(self, teamId: int) -> None:
        """A cursor page of the team's runs: `{items, nextCursor}` (limit default 20, at most 100)."""
        cursor, limit = self.cursor_args()
        self.ok(service.team_runs_page(self.require_caller(), teamId, bool(self.query_bool("activeOnly")), cursor, limit))


class ConversationRunsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(TeamRunView)}
    tags = TAGS

    def get(self, conversationId: str) -> None:
        """Team runs started from this lead conversation (its owner only), newest first."""
        self.ok(service.conversation_runs(self.require_caller(), conversationId))


class ConversationRunsPageHandler(CursorMixin):
    access = {"GET": "viewer"}
    answers = {"GET": one(TeamRunsPageView)}
    tags = TAGS
    query_params = {"GET": CURSOR}

    def get(self, conversationId: str) -> None:
        """A cursor page of the conversation's team runs: `{items, nextCursor}`."""
        cursor, limit = self.cursor_args()
        self.ok(service.conversation_runs_page(self.require_caller(), conversationId, cursor, limit))


class TeamsHandler(ApiHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(TeamListedView), "POST": one(TeamView)}
    body_models = {"POST": TeamCreate}
    tags = ("Teams",)

    def get(self) -> None:
        """Teams of the workspace with `team`, `leadName`, `memberCount` and `members` (extension route)."""
        self.ok(console.list_views(self.require_caller()))

    def post(self) -> None:
        """Create a team: a lead agent and member agents of the workspace (extension route)."""
        req = self.body(TeamCreate)
        self.ok(service.create_team(self.require_caller(), req.name, req.description, req.leadAgentId, req.memberAgentIds))


class TeamHandler(ApiHandler):
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    answers = {"GET": one(TeamDetailView), "PUT": one(TeamView), "DELETE": NOTHING}
    body_models = {"PUT": TeamUpdate}
    tags = ("Teams",)

    def get(self, teamId: int) -> None:
        """One team with `team` and `members` [{agentId, name, role, icon}] (extension route)."""
        self.ok(console.get_view(self.require_caller(), teamId))

    def put(self, teamId: int) -> None:
        """Update a team, sparse (extension route)."""
        req = self.body(TeamUpdate)
        fields: dict[str, Any] = req.model_dump()
        self.ok(service.update_team(self.require_caller(), teamId, fields))

    def delete(self, teamId: int) -> None:
        """Soft-delete a team without active runs (extension route)."""
        service.delete_team(self.require_caller(), teamId)
        self.ok(None)


class MembersHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(TeamDetailView)}
    body_models = {"POST": MemberAdd}
    tags = ("Teams",)

    def post(self, teamId: int) -> None:
        """Add an agent as `member` (appended) or `lead` (the old lead becomes a member)."""
        req = self.body(MemberAdd)
        self.ok(console.add_member(self.require_caller(), teamId, req.agentId, req.role))


class MemberHandler(ApiHandler):
    access = {"DELETE": "member"}
    answers = {"DELETE": one(TeamDetailView)}
    tags = ("Teams",)

    def delete(self, teamId: int, agentId: int) -> None:
        """Remove a member agent (not the lead)."""
        self.ok(console.remove_member(self.require_caller(), teamId, agentId))


class TeamTasksHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(TeamTaskView)}
    tags = ("Teams",)

    def get(self, teamId: int) -> None:
        """The member tasks of the team's runs; `status` (comma separated), `runId`, `limit`, `offset`."""
        statuses = [s for s in (self.get_query_argument("status", "") or "").split(",") if s]
        limit, offset = self.query_long("limit"), self.query_long("offset") or 0
        if (limit is not None and not 1 <= limit <= MAX_PAGE) or offset < 0:
            raise BadRequest(f"limit: must be between 1 and {MAX_PAGE}; offset: must not be negative")
        self.ok(console.tasks(self.require_caller(), teamId, statuses, self.query_long("runId"), limit, offset))


class TeamTaskStatsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(TeamTaskStatsView)}
    tags = ("Teams",)

    def get(self, teamId: int) -> None:
        """Counts of the team's member tasks by status (`runId` narrows to one run)."""
        self.ok(console.task_stats(self.require_caller(), teamId, self.query_long("runId")))


class TeamEventsHandler(LiveFeedHandler, ApiHandler):
    access = {"GET": "viewer"}
    sse_methods = frozenset({"GET"})
    events = {"GET": BOARD_EVENTS}
    tags = ("Teams",)

    async def get(self, teamId: int) -> None:
        """The team board live (SSE): `team_run_<status>` and `team_task_<event>` frames as its runs change, heartbeats between."""
        team = service.get_team_row(self.require_caller(), teamId)
        await self.feed(self.platform.runtime(TEAMS).board.subscribe(team.id), self.config.heartbeat_s)


ROUTES = gated(
    "team_runs",
    [
        route("/api/v1/team-runs/{runId}", TeamRunHandler),
        route("/api/v1/team-runs/{runId}/cancel", TeamRunCancelHandler),
        route("/api/v1/teams", TeamsHandler),
        route("/api/v1/teams/{teamId}", TeamHandler),
        route("/api/v1/teams/{teamId}/members", MembersHandler),
        route("/api/v1/teams/{teamId}/members/{agentId}", MemberHandler),
        route("/api/v1/teams/{teamId}/tasks", TeamTasksHandler),
        route("/api/v1/teams/{teamId}/tasks/stats", TeamTaskStatsHandler),
        route("/api/v1/teams/{teamId}/events", TeamEventsHandler),
        route("/api/v1/teams/{teamId}/runs", TeamRunsHandler),
        route("/api/v1/teams/{teamId}/runs/page", TeamRunsPageHandler),
        route("/api/v1/conversations/{conversationId:str}/team-runs", ConversationRunsHandler),
        route("/api/v1/conversations/{conversationId:str}/team-runs/page", ConversationRunsPageHandler),
    ],
)

FLAGS = [Flag("team_runs", True, "Multi-agent teams, team runs and the team_run tool")]
AGENT_TOOLS: list[ToolFactory] = [lifecycle.agent_tools]
