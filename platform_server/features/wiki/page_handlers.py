"""LLM Wiki page routes: read, edit, archive, rename, links, citations, search preview, stats."""

from __future__ import annotations

from platform_server.features.models import LLM
from platform_server.features.wiki import kbs, page_views, pages, profile, sync, tool
from platform_server.features.wiki.schemas import BatchDelete, PageEdit, RenameRequest, SearchPreview
from platform_server.web.base import ApiHandler
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, list_of, list_or_page, one
from platform_server.web.pagination import page_request
from platform_server.web.routing import route

TAGS = ("LLM Wiki",)
KB = "/api/v1/wiki/knowledge-bases/{kbId}/pages"


class PagesHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_or_page(page_views.WikiPageListedView)}
    tags = TAGS

    def get(self, kbId: int) -> None:
        """Pages (not archived), paged when `page` or `size` is given, else the whole list with each page's
        `outgoingLinks` (the original console's sidebar and graph); filter by `rawId`, `pageType`, `q`
        (title/slug contains) or `pendingChange=true`."""
        page, size = self.get_query_argument("page", None), self.get_query_argument("size", None)
        req = page_request(page, size, self.config.max_page_size)
        pending = self.get_query_argument("pendingChange", "false", strip=False)  # as sent: the document's enum
        if pending not in ("true", "false"):
            raise BadRequest("pendingChange: must be true or false")
        caller, raw_id = self.require_caller(), self.query_long("rawId")
        page_type, q = self.get_query_argument("pageType", None), self.get_query_argument("q", None)
        if page is None and size is None:
            self.ok(pages.all_pages(caller, kbId, raw_id, page_type, q, pending == "true"))
        else:
            self.ok(pages.list_pages(caller, kbId, req, raw_id, page_type, q, pending == "true"))


class ArchivedHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(page_views.WikiPageRowView)}
    tags = TAGS

    def get(self, kbId: int) -> None:
        """Archived pages (without content)."""
        self.ok(pages.archived(self.require_caller(), kbId))


class RefsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(page_views.WikiPageRefView)}
    tags = TAGS

    def get(self, kbId: int) -> None:
        """Every page's slug, title and archived flag, for resolving wikilinks."""
        self.ok(pages.refs(self.require_caller(), kbId))


class BatchHandler(ApiHandler):
    access = {"DELETE": "member"}
    answers = {"DELETE": one(page_views.WikiBatchDeleteView)}
    body_models = {"DELETE": BatchDelete}
    tags = TAGS

    def delete(self, kbId: int) -> None:
        """Delete pages by `slugs` and/or `ids` (unknown ones ignored); answers `{deleted}`."""
        self.ok(pages.batch_delete(self.require_caller(), kbId, self.body(BatchDelete)))


class PageHandler(ApiHandler):
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    answers = {"GET": one(page_views.WikiPageView), "PUT": one(page_views.WikiPageView), "DELETE": NOTHING}
    body_models = {"PUT": PageEdit}
    tags = TAGS

    def get(self, kbId: int, slug: str) -> None:
        """A page with its markdown, resolved links and sources."""
        self.ok(pages.get(self.require_caller(), kbId, slug))

    async def put(self, kbId: int, slug: str) -> None:
        """Edit a page by hand (`markdown`, optional `title`, `pageType`); links are recomputed."""
        req = self.body(PageEdit)
        caller = self.require_caller()
        kb = kbs.get_kb(caller, kbId)
        page = pages.get_page(kb, slug)
        if req.pageType is not None:
            profile.check_type(kb, req.pageType)
        got = await tool.embed_query(self.platform.runtime(LLM), kb, f"{req.title or page.title}\n\n{req.markdown[:4000]}")
        self.ok(pages.edit(caller, kbId, slug, req, got.vector, got.model_id))

    def delete(self, kbId: int, slug: str) -> None:
        """Delete a page."""
        pages.delete(self.require_caller(), kbId, slug)
        self.ok(None)


class ArchiveHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(page_views.WikiPageRowView)}
    tags = TAGS
    value = 1

    def post(self, kbId: int, slug: str) -> None:
        """Archive a page (soft, recoverable: `archived=1`)."""
        self.ok(pages.set_archived(self.require_caller(), kbId, slug, self.value))


class UnarchiveHandler(ArchiveHandler):
    answers = {"POST": one(page_views.WikiPageRowView)}
    value = 0

    def post(self, kbId: int, slug: str) -> None:
        """Unarchive a page (`archived=0`)."""
        self.ok(pages.set_archived(self.require_caller(), kbId, slug, self.value))


class PendingAcceptHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(page_views.WikiPageView)}
    tags = TAGS

    def post(self, kbId: int, slug: str) -> None:
        """Apply the page's pending change (a re-sync's version of a hand-edited page, or its archiving)."""
        self.ok(sync.accept(self.require_caller(), kbId, slug))


class PendingDismissHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(page_views.WikiPageView)}
    tags = TAGS

    def post(self, kbId: int, slug: str) -> None:
        """Drop the page's pending change; the hand-edited text stays."""
        self.ok(sync.dismiss(self.require_caller(), kbId, slug))


class BacklinksHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(page_views.WikiPageRowView)}
    tags = TAGS

    def get(self, kbId: int, slug: str) -> None:
        """Pages whose wikilinks point at this page."""
        self.ok(pages.backlinks(self.require_caller(), kbId, slug))


class RenameHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(page_views.WikiRenamedPageView)}
    body_models = {"POST": RenameRequest}
    tags = TAGS

    def post(self, kbId: int, slug: str) -> None:
        """Rename (`newSlug`, `newTitle`) and rewrite the wikilinks of every referrer."""
        self.ok(pages.rename(self.require_caller(), kbId, slug, self.body(RenameRequest)))


class RelatedHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(page_views.WikiRelatedPageView)}
    tags = TAGS

    def get(self, kbId: int, slug: str) -> None:
        """Linked, linking and most similar pages (`limit`, default 10)."""
        limit = self.query_long("limit")
        limit = 10 if limit is None else limit  # 0 is out of range, not the default
        if not 1 <= limit <= 50:
            raise BadRequest("limit: must be between 1 and 50")
        self.ok(pages.related(self.require_caller(), kbId, slug, limit))


class CitationsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(page_views.WikiCitationView)}
    tags = TAGS

    def get(self, kbId: int, pageId: int) -> None:
        """The source chunks a page cites."""
        self.ok(pages.citations(self.require_caller(), kbId, pageId))


class ChunkPagesHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(page_views.WikiPageRowView)}
    tags = TAGS

    def get(self, chunkId: int) -> None:
        """Pages citing a chunk."""
        self.ok(pages.pages_of_chunk(self.require_caller(), chunkId))


class RawPagesHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(page_views.WikiPageRowView)}
    tags = TAGS

    def get(self, rawId: int) -> None:
        """Pages generated from a raw material."""
        self.ok(pages.pages_of_raw(self.require_caller(), rawId))


class LookupHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(page_views.WikiLookupPageView)}
    tags = TAGS

    def get(self) -> None:
        """Pages of any KB in the workspace by exact `title` (case-insensitive) or `slug`."""
        self.ok(pages.lookup(self.require_caller(), self.get_query_argument("title", None), self.get_query_argument("slug", None)))


class SearchPreviewHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(page_views.WikiSearchPreviewView)}
    body_models = {"POST": SearchPreview}
    tags = TAGS

    async def post(self, kbId: int) -> None:
        """Hybrid keyword + vector search over pages (and raw chunks) with scores."""
        req = self.body(SearchPreview)
        kb = kbs.get_kb(self.require_caller(), kbId)
        self.ok(await tool.preview(self.platform.runtime(LLM), kb, req.query, req.topK, req.includeArchived))


class StatsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(page_views.WikiStatsView)}
    tags = TAGS

    def get(self, kbId: int) -> None:
        """Counts of materials by state, pages by type, chunks, links, broken links and citations."""
        self.ok(pages.stats(self.require_caller(), kbId))


ROUTES = [
    route(KB, PagesHandler),
    route(f"{KB}/archived", ArchivedHandler),
    route(f"{KB}/refs", RefsHandler),
    route(f"{KB}/batch", BatchHandler),
    route(f"{KB}/{{slug}}", PageHandler),
    route(f"{KB}/{{slug}}/archive", ArchiveHandler),
    route(f"{KB}/{{slug}}/unarchive", UnarchiveHandler),
    route(f"{KB}/{{slug}}/pending-change/accept", PendingAcceptHandler),
    route(f"{KB}/{{slug}}/pending-change/dismiss", PendingDismissHandler),
    route(f"{KB}/{{slug}}/backlinks", BacklinksHandler),
    route(f"{KB}/{{slug}}/rename", RenameHandler),
    route("/api/v1/wiki/kb/{kbId}/pages/{slug}/related", RelatedHandler),
    route("/api/v1/wiki/kb/{kbId}/pages/{pageId}/citations", CitationsHandler),
    route("/api/v1/wiki/chunks/{chunkId}/pages", ChunkPagesHandler),
    route("/api/v1/wiki/raw/{rawId}/pages", RawPagesHandler),
    route("/api/v1/wiki/pages/lookup", LookupHandler),
    route("/api/v1/wiki/kb/{kbId}/search-preview", SearchPreviewHandler),
    route("/api/v1/wiki/kb/{kbId}/stats", StatsHandler),
]

__all__ = ["ROUTES"]
