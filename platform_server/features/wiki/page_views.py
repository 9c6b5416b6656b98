"""What the LLM Wiki page routes answer: pages, their links, search preview, relations and the broken-link scan.

View models of the API document (web/openapi_answers.py), checked against every answer the test suite receives
(tests/helpers/answers.py); the dicts come from pages.summary / pages.detail, maintenance, lint and search.
"""

from __future__ import annotations

from pydantic import Field

from platform_server.features.wiki.views import WikiStatusCountsView
from platform_server.serialize import View

ARCHIVED = "1 when the page is archived, else 0"


class WikiPageRowView(View):
    """A page without its text (`pages.summary`); `lastUpdatedBy` is the console's name for `origin` (manual|ai)."""

    id: str
    kbId: str
    slug: str
    title: str
    pageType: str
    archived: int = Field(description=ARCHIVED)
    archivedReason: str | None
    hasPendingChange: bool
    origin: str
    version: int
    createTime: str | None
    updateTime: str | None
    lastUpdatedBy: str


class WikiPageListedView(WikiPageRowView):
    """A page of the pages list: the whole list (no `page`/`size`) also carries `outgoingLinks`."""

    outgoingLinks: str = Field("[]", description="JSON text: the targets this page links to (whole list only)")


class WikiLookupPageView(WikiPageRowView):
    kbName: str


class WikiPendingChangeView(View):
    """A re-sync's version of a hand-edited page, waiting for review: `update` carries the new text, `archive` none."""

    action: str = Field(description="update or archive")
    title: str | None = None
    pageType: str | None = None
    markdown: str | None = None
    rawId: str
    time: str | None


class WikiPageLinkView(View):
    target: str = Field(description="the link text")
    slug: str
    title: str | None = Field(description="null: the link is broken")
    exists: bool
    archived: int | None = Field(description=ARCHIVED + "; null when broken")


class WikiPageView(WikiPageRowView):
    """A page with its text, links and sources (`pages.detail`); `content` repeats `markdown` for the console."""

    markdown: str
    content: str
    outgoingLinks: str = Field(description="JSON text: the link targets")
    sourceRawIds: str = Field(description="JSON text: the ids of the materials it was written from")
    pendingChange: WikiPendingChangeView | None
    links: list[WikiPageLinkView]
    rawIds: list[str]
    citationCount: int
    backlinkCount: int


class WikiRenamedPageView(WikiPageView):
    updatedReferrers: list[str] = Field(description="slugs of the pages whose links were rewritten")


class WikiEnrichedPageView(WikiPageView):
    restoredLinks: list[str]
    citations: int


class WikiLinkChangeView(View):
    model_config = {"populate_by_name": True}

    from_: str = Field(alias="from")
    to: str


class WikiRepairedPageView(WikiPageView):
    repaired: bool = Field(description="false: no broken link, nothing changed")
    changedLinks: list[WikiLinkChangeView]
    removedLinks: list[str]
    stillBroken: list[str] = Field(default_factory=list, description="when repaired")
    restoredLinks: list[str] = Field(default_factory=list, description="when repaired")


class WikiPageRefView(View):
    slug: str
    title: str
    archived: int = Field(description=ARCHIVED)


class WikiBatchDeleteView(View):
    deleted: int


class WikiRelatedPageView(View):
    pageId: str
    slug: str
    title: str
    pageType: str
    relation: str = Field(description="links_to, linked_from or similar")
    score: float


class WikiCitationView(View):
    chunkId: str
    rawId: str
    rawTitle: str
    position: int
    text: str


class WikiDirectLinksView(View):
    aToB: bool
    bToA: bool


class WikiSharedCitationView(View):
    chunkId: str
    rawId: str
    position: int
    text: str


class WikiNeighbourView(View):
    slug: str
    title: str


class WikiRelationView(View):
    a: WikiPageRowView
    b: WikiPageRowView
    directLinks: WikiDirectLinksView
    sharedCitations: list[WikiSharedCitationView]
    sharedSourceRawIds: list[str]
    commonNeighbours: list[WikiNeighbourView]
    similarity: float
    summary: str


class WikiPageHitView(View):
    pageId: str
    kbId: str
    slug: str
    title: str
    pageType: str
    archived: int = Field(description=ARCHIVED)
    snippet: str
    score: float
    keywordScore: float
    vectorScore: float


class WikiChunkHitView(View):
    chunkId: str
    rawId: str
    rawTitle: str
    position: int
    snippet: str
    score: float
    keywordScore: float
    vectorScore: float


class WikiSearchPreviewView(View):
    query: str
    topK: int
    results: list[WikiPageHitView]
    chunks: list[WikiChunkHitView]
    vectorSearch: bool
    vectorError: str | None


class WikiStatsView(View):
    kbId: str
    rawCount: int
    rawByStatus: WikiStatusCountsView
    pageCount: int
    archivedPageCount: int
    pageTypes: dict[str, int] = Field(description="pages per page type")
    chunkCount: int
    linkCount: int
    brokenLinkCount: int
    citationCount: int


class WikiBrokenLinkView(View):
    pageSlug: str
    pageTitle: str
    target: str
    targetSlug: str


class WikiBrokenTargetView(View):
    targetSlug: str
    target: str
    count: int
    pages: list[str]


class WikiLintResultView(View):
    scannedPages: int
    linkCount: int
    brokenCount: int
    archivedTargetCount: int
    broken: list[WikiBrokenLinkView]
    archivedTargets: list[WikiBrokenLinkView] = Field(description="links to an archived page")
    byTarget: list[WikiBrokenTargetView]


class WikiLintPageView(View):
    slug: str
    title: str
    brokenRefs: list[str]


class WikiLintJobView(View):
    """A broken-link scan; `startedAt` .. `pages` are the original console's names for it."""

    jobId: str
    kbId: str
    status: str
    error: str | None
    result: WikiLintResultView | None
    createTime: str | None
    endTime: str | None
    startedAt: str | None
    completedAt: str | None
    totalPages: int
    pagesWithBrokenLinks: int
    totalBrokenRefs: int
    pages: list[WikiLintPageView]
    errorMessage: str | None


class WikiLintLatestView(View):
    """The latest completed scan; before the first one only `jobId` (null) .. `completedAt` are sent."""

    jobId: str | None
    kbId: str
    status: str | None
    result: WikiLintResultView | None
    scanRunning: bool
    completedAt: str | None
    error: str | None = None
    createTime: str | None = None
    endTime: str | None = None
    startedAt: str | None = None
    totalPages: int | None = None
    pagesWithBrokenLinks: int | None = None
    totalBrokenRefs: int | None = None
    pages: list[WikiLintPageView] | None = None
    errorMessage: str | None = None
