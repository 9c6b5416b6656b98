"""How a re-processed material meets the pages it made before: pages it no longer produces are archived,
and a page a person edited by hand is never overwritten: the new version waits beside it for review.

A note edited in a watched folder (or a material reprocessed) writes a new set of pages; the pages the
old version wrote and the new one does not would otherwise stay live with text that contradicts the
new version. Only a run that completed (not partial: a failed batch may hold the missing pages) and
wrote pages retires anything, and only generated pages no other material still claims.
"""

from __future__ import annotations

from typing import Any, Iterable

from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.wiki import pages, search
from platform_server.features.wiki.kbs import get_kb
from platform_server.features.wiki.models import Page, PageSource
from platform_server.web.context import Caller
from platform_server.web.errors import Conflict

NOT_PRODUCED = "no longer produced by its source"  # archived_reason of a page a re-sync retired


def retire_unproduced(raw_id: int, produced: Iterable[int]) -> list[int]:
    """Unlink the pages the material made before and not in this run; archive the generated ones left with no source.

    Runs inside the caller's transaction; returns the ids archived.
    """
    keep = set(produced)
    old = [s.page_id for s in PageSource.select(PageSource.page).where(PageSource.raw == raw_id)]
    gone = [pid for pid in old if pid not in keep]
    if not gone:
        return []
    PageSource.delete().where((PageSource.raw == raw_id) & PageSource.page.in_(gone)).execute()
    claimed = {s.page_id for s in PageSource.select(PageSource.page).where(PageSource.page.in_(gone))}
    orphans = [pid for pid in gone if pid not in claimed]
    if not orphans:
        return []
    # Pages written by agents or syntheses are theirs: only what a material generated is retired, and a
    # page a person edited is archived only once that person accepts it.
    live = list(Page.select(Page.id, Page.origin).where(Page.id.in_(orphans) & (Page.archived == 0)))
    targets = [p.id for p in live if p.origin == "generated"]
    propose_archive([p.id for p in live if p.origin == "manual"], raw_id)
    if targets:
        Page.update(archived=1, archived_reason=NOT_PRODUCED, update_time=utcnow()).where(Page.id.in_(targets)).execute()
    return targets


def revive(page: Page) -> None:
    """A page a sync retired comes back when a material produces it again (one a person archived stays archived)."""
    if page.archived and page.archived_reason == NOT_PRODUCED:
        page.archived, page.archived_reason = 0, None


# ---- hand-edited pages: a re-sync's version waits beside them -----------------------------------


def hold_for_review(page: Page, raw_id: int, title: str, page_type: str, markdown: str, embedding: bytes) -> bool:
    """Whether a person's page keeps its text; a different generated version is kept as its pending change."""
    if page.origin != "manual":
        return False
    if (title, page_type, markdown) != (page.title, page.page_type, page.markdown):
        page.pending = {"action": "update", "title": title, "pageType": page_type, "markdown": markdown, "rawId": str(raw_id), "time": iso(utcnow())}
        page.pending_embedding = embedding
    else:  # the material now says what the person wrote: nothing is left to review
        page.pending, page.pending_embedding = None, None
    return True


def propose_archive(page_ids: list[int], raw_id: int) -> None:
    """Hand-edited pages a material no longer produces are not archived: archiving waits for a person."""
    change = {"action": "archive", "rawId": str(raw_id), "time": iso(utcnow())}
    Page.update(pending=change, pending_embedding=None).where(Page.id.in_(page_ids or [0])).execute()


def pending_change(page: Page) -> dict[str, Any] | None:
    """The change waiting for review: `{action: update|archive, title, pageType, markdown, rawId, time}`."""
    return dict(page.pending) if page.pending else None


def accept(caller: Caller, kb_id: int, slug: str) -> dict[str, Any]:
    """Apply the page's pending change: the generated version replaces the hand edit (later syncs update it), or the page is archived."""
    with database.atomic():
        page = pages.get_page(get_kb(caller, kb_id), slug)
        change = _pending(page)
        if change["action"] == "archive":
            page.archived, page.archived_reason = 1, NOT_PRODUCED
        else:
            page.title, page.page_type, page.markdown = change["title"], change["pageType"], change["markdown"]
            if page.pending_embedding is not None:  # its model is not kept: the re-embedder makes it current
                page.embedding, page.dims, page.embed_model = page.pending_embedding, len(page.pending_embedding) // 4, None
            page.origin = "generated"
            page.version += 1
        page.pending, page.pending_embedding, page.update_time = None, None, utcnow()
        page.save()
        if change["action"] != "archive":
            pages.set_links(page)
            search.fts_put_page(page)
        audit.record(caller, "UPDATE", "WIKI_PAGE", page.id, f"accept the pending {change['action']} of page {page.slug}")
    return pages.detail(page)


def dismiss(caller: Caller, kb_id: int, slug: str) -> dict[str, Any]:
    """Drop the page's pending change: the person's text stays (the next sync may propose again)."""
    with database.atomic():
        page = pages.get_page(get_kb(caller, kb_id), slug)
        change = _pending(page)
        page.pending, page.pending_embedding, page.update_time = None, None, utcnow()
        page.save()
        audit.record(caller, "UPDATE", "WIKI_PAGE", page.id, f"dismiss the pending {change['action']} of page {page.slug}")
    return pages.detail(page)


def _pending(page: Page) -> dict[str, Any]:
    change = pending_change(page)
    if change is None:
        raise Conflict("The page has no pending change")  # the page's state, not the request: a 409
    return change
