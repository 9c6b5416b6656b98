"""Routes the original web console calls that have no feature behind them here (honest answers)."""

from __future__ import annotations

from platform_server.features.compat import service
from platform_server.features.compat.schemas import (
    AgentKbBindingView,
    ContentItemsPageView,
    ContentItemsSummaryView,
    DocContentView,
    DocView,
    DshDiagnosticsView,
    DshStatusView,
    SearchProvidersView,
    SsoProvidersView,
)
from platform_server.features.conversations import service as conversations
from platform_server.features.wiki import kbs
from platform_server.ids import NOT_BLANK_RE
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN, LOGIN, PUBLIC
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.pagination import page_request
from platform_server.web.routing import route


class SsoProvidersHandler(ApiHandler):
    answers = {"GET": one(SsoProvidersView)}
    access = {"GET": PUBLIC}
    tags = ("Authentication",)

    def get(self) -> None:
        """Enabled single-sign-on providers: none (password and token login only)."""
        self.ok([])


class DocsHandler(ApiHandler):
    answers = {"GET": list_of(DocView)}
    access = {"GET": LOGIN}
    tags = ("Console",)

    def get(self) -> None:
        """The installation's documents (`lang` accepted; they are in English) as `{slug, title, group}`."""
        self.ok(service.docs_list())


class DocContentHandler(ApiHandler):
    answers = {"GET": one(DocContentView)}
    access = {"GET": LOGIN}
    tags = ("Console",)

    def get(self) -> None:
        """One document's markdown, chosen by `slug`."""
        slug = self.get_query_argument("slug", "", strip=False)
        if not NOT_BLANK_RE.search(slug):  # the document's QUERY_NOT_BLANK_PATTERN, as Tornado gives the value
            raise BadRequest("slug: must not be blank")
        self.ok(service.doc_content(slug.strip()))


class ContentItemsHandler(ApiHandler):
    answers = {"GET": one(ContentItemsPageView)}
    access = {"GET": "viewer"}
    tags = ("Console",)

    def get(self) -> None:
        """Published content pieces: none (no content publishing here); a page of `records`."""
        req = page_request(self.get_query_argument("page", None), self.get_query_argument("size", None), self.platform.config.max_page_size)
        self.ok(service.content_items_page(req.page, req.size))


class ContentItemsSummaryHandler(ApiHandler):
    answers = {"GET": one(ContentItemsSummaryView)}
    access = {"GET": "viewer"}
    tags = ("Console",)

    def get(self) -> None:
        """Counts of content pieces by status (all zero)."""
        self.ok(service.content_items_summary())


class DshStatusHandler(ApiHandler):
    answers = {"GET": one(DshStatusView)}
    access = {"GET": GLOBAL_ADMIN}
    tags = ("Console",)

    def get(self) -> None:
        """The DeepSeek harness runtime: not supported by this server."""
        self.ok(service.dsh_status())


class DshDiagnosticsHandler(ApiHandler):
    answers = {"GET": one(DshDiagnosticsView)}
    access = {"GET": "viewer"}
    tags = ("Console",)

    def get(self) -> None:
        """Harness diagnostics: no executable, no config (the runtime is not part of this server)."""
        self.ok(service.dsh_diagnostics())


class SearchProvidersHandler(ApiHandler):
    answers = {"GET": one(SearchProvidersView)}
    access = {"GET": LOGIN}
    tags = ("Settings",)

    def get(self) -> None:
        """Web-search providers: none built in."""
        self.ok(service.search_providers())


class TeamWorkerContextHandler(ApiHandler):
    answers = {"GET": NOTHING}
    access = {"GET": "viewer"}
    tags = ("Conversations",)

    def get(self, conversationId: str) -> None:
        """The team-run task a conversation works for: null (team members run as sub-agent delegations here)."""
        conversations.owned(self.require_caller(), conversationId)
        self.ok(None)


class AgentKbsHandler(ApiHandler):
    answers = {"GET": list_of(AgentKbBindingView), "PUT": list_of(AgentKbBindingView)}
    access = {"GET": "viewer", "PUT": "member"}
    tags = ("Agents",)

    def get(self, agentId: int) -> None:
        """Knowledge bases bound to the agent (besides its primary one), as rows `{agentId, kbId, enabled}`."""
        self.ok(kbs.agent_bindings(self.require_caller(), agentId))

    def put(self, agentId: int) -> None:
        """Replace the agent's bound knowledge bases; the body is a bare array of KB ids."""
        self.ok(kbs.set_agent_bindings(self.require_caller(), agentId, self.json_body()))


ROUTES = [
    route("/api/v1/auth/sso/providers", SsoProvidersHandler),
    route("/api/v1/docs", DocsHandler),
    route("/api/v1/docs/content", DocContentHandler),
    route("/api/v1/content-items", ContentItemsHandler),
    route("/api/v1/content-items/summary", ContentItemsSummaryHandler),
    route("/api/v1/admin/dsh/status", DshStatusHandler),
    route("/api/v1/admin/agent-runtime/dsh/diagnostics", DshDiagnosticsHandler),
    route("/api/v1/settings/search-providers", SearchProvidersHandler),
    route("/api/v1/conversations/{conversationId:str}/team-worker-context", TeamWorkerContextHandler),
    route("/api/v1/agents/{agentId}/kbs", AgentKbsHandler),
]
