"""LLM Wiki maintenance routes: page relations, enrich, repair, and the admin batches."""

from __future__ import annotations

from platform_server.features.models import LLM
from platform_server.features.wiki import maintenance, page_views, views
from platform_server.features.wiki.schemas import EnrichRequest
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route

TAGS = ("LLM Wiki",)
PAGE = "/api/v1/wiki/kb/{kbId}/pages/{slug}"


class RelationHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(page_views.WikiRelationView)}
    tags = TAGS

    def get(self, kbId: int, slugA: str, slugB: str) -> None:
        """How two pages connect: direct links, shared citations and sources, common neighbours, similarity."""
        self.ok(maintenance.relation(self.require_caller(), kbId, slugA, slugB))


class EnrichHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(page_views.WikiEnrichedPageView)}
    body_models = {"POST": EnrichRequest}
    tags = TAGS

    async def post(self, kbId: int, slug: str) -> None:
        """LLM rewrite with more detail from the cited chunks (`instructions` optional); no wikilink is lost."""
        req = self.body(EnrichRequest)
        self.ok(await maintenance.enrich(self.platform.runtime(LLM), self.require_caller(), kbId, slug, req))


class RepairHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(page_views.WikiRepairedPageView)}
    tags = TAGS

    async def post(self, kbId: int, slug: str) -> None:
        """Fix the page's broken wikilinks with the LLM; what changed is listed (`changedLinks`, `removedLinks`)."""
        self.ok(await maintenance.repair(self.platform.runtime(LLM), self.require_caller(), kbId, slug))


class BackfillHandler(ApiHandler):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": one(views.WikiBackfillView)}
    tags = TAGS

    def post(self) -> None:
        """Run one token-count backfill batch over chunks and pages without a count (global admin)."""
        self.ok(maintenance.backfill_tokens())


class OverviewHandler(ApiHandler):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": one(views.WikiOverviewView)}
    tags = TAGS

    def post(self, kbId: int) -> None:
        """Create the `overview` and `log` pages when missing and rewrite the overview's statistics (global admin)."""
        self.ok(maintenance.rebuild_overview(self.require_caller(), kbId))


ROUTES = [
    route("/api/v1/wiki/kb/{kbId}/pages/{slugA}/relation/{slugB}", RelationHandler),
    route(f"{PAGE}/enrich", EnrichHandler),
    route(f"{PAGE}/repair", RepairHandler),
    route("/api/v1/wiki/admin/backfill-tokens", BackfillHandler),
    route("/api/v1/wiki/admin/kb/{kbId}/rebuild-overview", OverviewHandler),
]
