"""How a re-processed material meets the pages it made before: pages it no longer produces are archived.

A note edited in a watched folder (or a material reprocessed) writes a new set of pages; the pages the
old version wrote and the new one does not would otherwise stay live with text that contradicts the
new version. Only a run that completed (not partial: a failed batch may hold the missing pages) and
wrote pages retires anything, and only generated pages no other material still claims.
"""

from __future__ import annotations

from typing import Iterable

from platform_server.db import utcnow
from platform_server.features.wiki.models import Page, PageSource

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
    # Pages written by people, agents or syntheses are theirs: only what a material generated is retired.
    targets = [p.id for p in Page.select(Page.id).where(Page.id.in_(orphans) & (Page.origin == "generated") & (Page.archived == 0))]
    if targets:
        Page.update(archived=1, archived_reason=NOT_PRODUCED, update_time=utcnow()).where(Page.id.in_(targets)).execute()
    return targets


def revive(page: Page) -> None:
    """A page a sync retired comes back when a material produces it again (one a person archived stays archived)."""
    if page.archived and page.archived_reason == NOT_PRODUCED:
        page.archived, page.archived_reason = 0, None
