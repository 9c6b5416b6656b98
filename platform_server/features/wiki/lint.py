"""Broken-link lint: an async scan job per KB; the latest finished scan is the aggregate."""

from __future__ import annotations

import logging
from typing import Any

from platform_server.blocking import run_blocking
from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.wiki.kbs import get_kb
from platform_server.features.wiki.models import LintRun, Page, PageLink
from platform_server.features.wiki.pages import resolver
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import NotFound

log = logging.getLogger(__name__)


def scan(kb_id: int) -> dict[str, Any]:
    """Links whose target is no page (broken) or an archived page, grouped by target (blocking)."""
    keys = resolver(kb_id)
    pages = {p.id: p for p in Page.select(Page.id, Page.slug, Page.title).where(Page.kb == kb_id)}
    broken: list[dict[str, Any]] = []
    archived: list[dict[str, Any]] = []
    links = list(PageLink.select().where(PageLink.kb_id == kb_id).order_by(PageLink.page, PageLink.id))
    for link in links:
        source = pages.get(link.page_id)
        if source is None:
            continue
        item = {"pageSlug": source.slug, "pageTitle": source.title, "target": link.target_text, "targetSlug": link.target_slug}
        target = keys.get(link.target_slug)
        if target is None:
            broken.append(item)
        elif target.archived:
            archived.append(item)
    by_target: dict[str, dict[str, Any]] = {}
    for item in broken:
        entry = by_target.setdefault(item["targetSlug"], {"targetSlug": item["targetSlug"], "target": item["target"], "count": 0, "pages": []})
        entry["count"] += 1
        entry["pages"].append(item["pageSlug"])
    return {
        "scannedPages": len(pages),
        "linkCount": len(links),
        "brokenCount": len(broken),
        "archivedTargetCount": len(archived),
        "broken": broken,
        "archivedTargets": archived,
        "byTarget": sorted(by_target.values(), key=lambda e: (-e["count"], e["targetSlug"])),
    }


to_dict = Fields(
    jobId=ident("id"),
    kbId=ident("kb_id"),
    status="status",
    error="error",
    result="result",
    createTime=when("create_time"),
    endTime=when("end_time"),
)


def start(caller: Caller, kb_id: int) -> LintRun:
    with database.atomic():
        kb = get_kb(caller, kb_id)
        run = LintRun.create(kb=kb.id, status="running")
        audit.record(caller, "CREATE", "WIKI_LINT", run.id, f"broken-link scan of {kb.name}")
    return run


async def execute(run_id: int, kb_id: int) -> None:
    """The job body: scan off the IOLoop, store the result."""
    try:
        result = await run_blocking(scan, kb_id)
        status, error = "completed", None
    except Exception as exc:  # noqa: BLE001 - recorded on the job
        log.warning("lint of kb %s failed", kb_id, exc_info=True)
        result, status, error = None, "failed", f"{type(exc).__name__}: {exc}"[:1000]
    LintRun.update(status=status, result=result, error=error, end_time=utcnow()).where(LintRun.id == run_id).execute()


def _console(run: LintRun) -> dict[str, Any]:
    """The original console's names for a scan: `startedAt`, `completedAt`, `totalPages`,
    `pagesWithBrokenLinks`, `totalBrokenRefs` and `pages` [{slug, title, brokenRefs}] (its banner and panel)."""
    result = run.result or {}
    by_page: dict[str, dict[str, Any]] = {}
    for item in result.get("broken", []):
        row = by_page.setdefault(item["pageSlug"], {"slug": item["pageSlug"], "title": item["pageTitle"], "brokenRefs": []})
        row["brokenRefs"].append(item["target"])
    return {
        "startedAt": iso(run.create_time),
        "completedAt": iso(run.end_time),
        "totalPages": result.get("scannedPages", 0),
        "pagesWithBrokenLinks": len(by_page),
        "totalBrokenRefs": result.get("brokenCount", 0),
        "pages": list(by_page.values()),
        "errorMessage": run.error,
    }


def job_dict(run: LintRun) -> dict[str, Any]:
    return {**to_dict(run), **_console(run)}


def job(caller: Caller, kb_id: int, job_id: int) -> dict[str, Any]:
    kb = get_kb(caller, kb_id)
    run = LintRun.get_or_none((LintRun.id == job_id) & (LintRun.kb == kb.id))
    if run is None:
        raise NotFound("Lint job not found")
    return job_dict(run)


def latest(caller: Caller, kb_id: int) -> dict[str, Any]:
    """The latest completed scan (`jobId` null and no result before the first one)."""
    kb = get_kb(caller, kb_id)
    run = (
        LintRun.select()
        .where((LintRun.kb == kb.id) & (LintRun.status == "completed"))
        .order_by(LintRun.create_time.desc(), LintRun.id.desc())
        .first()
    )
    running = LintRun.select().where((LintRun.kb == kb.id) & (LintRun.status == "running")).exists()
    if run is None:
        return {"jobId": None, "kbId": str(kb.id), "status": None, "result": None, "scanRunning": running, "completedAt": None}
    return {**to_dict(run), **_console(run), "scanRunning": running}
