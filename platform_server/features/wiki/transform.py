"""Transformations: prompt templates run against a material or a page, their runs, and aggregates.

A run is `running` until the model answers (`completed`), fails (`failed`) or is cancelled
(`cancelled`; its task is stopped and nothing is saved). An aggregate is a run over every completed
run of the template in a KB, saved as one KB-level `synthesis` page when it completes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from platform_server import leases
from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.models.errors import failure_text
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.usage import meter
from platform_server.features.wiki import kbs, synthesis
from platform_server.features.wiki.models import (
    Chunk,
    KnowledgeBase,
    Page,
    PageCitation,
    RawMaterial,
    Transformation,
    TransformationRun,
)
from platform_server.features.wiki.schemas import ApplyRequest, TransformationBody, TransformationUpdate
from platform_server.integrations.llm.types import ChatMessage, ChatRequest
from platform_server.leases import LOST_ERROR, RunKind
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound
from platform_server.web.ownership import require_creator_or_admin

log = logging.getLogger(__name__)

MAX_CONTENT_CHARS = 60_000
RUN_STATES = ("running", "completed", "failed", "cancelled")


to_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    kbId=ident("kb_id"),
    name="name",
    description="description",
    prompt="prompt",
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


run_dict = Fields(
    id=ident("id"),
    transformationId=ident("transformation_id"),
    kbId=ident("kb_id"),
    targetType="target_type",
    targetId=ident("target_id"),
    targetTitle="target_title",
    status="status",
    output="output",
    error="error",
    pageSlug="page_slug",
    createTime=when("create_time"),
    endTime=when("end_time"),
)


def get(caller: Caller, tid: int) -> Transformation:
    t = Transformation.get_or_none((Transformation.id == tid) & (Transformation.workspace_id == caller.workspace_id))
    if t is None:
        raise NotFound("Transformation not found")
    return t


def list_for(caller: Caller, kb_id: int | None) -> list[dict[str, Any]]:
    """The workspace's templates; with a KB, those for every KB plus that KB's own."""
    q = Transformation.select().where(Transformation.workspace_id == caller.workspace_id)
    if kb_id is not None:
        kbs.get_kb(caller, kb_id)
        q = q.where(Transformation.kb_id.is_null() | (Transformation.kb_id == kb_id))
    return [to_dict(t) for t in q.order_by(Transformation.name, Transformation.id)]


def create(caller: Caller, req: TransformationBody) -> dict[str, Any]:
    with database.atomic():
        if req.kbId is not None:
            kbs.get_kb(caller, req.kbId)
        t = Transformation.create(
            workspace_id=caller.workspace_id,
            kb_id=req.kbId,
            creator_user_id=caller.user_id,
            name=req.name.strip(),
            description=req.description,
            prompt=req.prompt,
        )
        audit.record(caller, "CREATE", "WIKI_TRANSFORMATION", t.id, f"transformation {t.name}")
    return to_dict(t)


def update(caller: Caller, tid: int, req: TransformationUpdate) -> dict[str, Any]:
    with database.atomic():
        t = get(caller, tid)
        require_creator_or_admin(caller, t.creator_user_id, "transformation")
        for name, attr in (("name", "name"), ("description", "description"), ("prompt", "prompt")):
            value = getattr(req, name)
            if value is not None:
                setattr(t, attr, value.strip() if name == "name" else value)
        t.update_time = utcnow()
        t.save()
        audit.record(caller, "UPDATE", "WIKI_TRANSFORMATION", t.id, f"transformation {t.name}")
    return to_dict(t)


def delete(caller: Caller, tid: int) -> list[int]:
    """Delete the template and its runs; returns the ids of runs still running (to stop)."""
    with database.atomic():
        t = get(caller, tid)
        require_creator_or_admin(caller, t.creator_user_id, "transformation")
        running = [
            r.id
            for r in TransformationRun.select(TransformationRun.id).where(
                (TransformationRun.transformation == t.id) & (TransformationRun.status == "running")
            )
        ]
        t.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "WIKI_TRANSFORMATION", tid, f"transformation {t.name}")
    return running


def get_run(caller: Caller, run_id: int) -> TransformationRun:
    run = TransformationRun.get_or_none((TransformationRun.id == run_id) & (TransformationRun.workspace_id == caller.workspace_id))
    if run is None:
        raise NotFound("Transformation run not found")
    return run


def list_runs(caller: Caller, tid: int | None, kb_id: int | None, status: str | None) -> list[dict[str, Any]]:
    q = TransformationRun.select().where(TransformationRun.workspace_id == caller.workspace_id)
    if tid is not None:
        q = q.where(TransformationRun.transformation == tid)
    if kb_id is not None:
        q = q.where(TransformationRun.kb == kb_id)
    if status is not None:  # an empty value is no run state (the document's enum): a 400, not "any status"
        if status not in RUN_STATES:
            raise BadRequest(f"status: must be one of {', '.join(RUN_STATES)}")
        q = q.where(TransformationRun.status == status)
    return [run_dict(r) for r in q.order_by(TransformationRun.create_time.desc(), TransformationRun.id.desc()).limit(500)]


def fill(prompt: str, title: str, content: str) -> str:
    content = content[:MAX_CONTENT_CHARS]
    if "{{content}}" not in prompt:
        prompt += "\n\n{{content}}"
    return prompt.replace("{{title}}", title).replace("{{content}}", content)


def start_apply(caller: Caller, tid: int, req: ApplyRequest) -> tuple[TransformationRun, str]:
    """A `running` run and the filled prompt for it."""
    if (req.rawId is None) == (req.slug is None):
        raise BadRequest("rawId: give exactly one of rawId or slug")
    t = get(caller, tid)
    kb = kbs.get_kb(caller, req.kbId)
    if t.kb_id is not None and t.kb_id != kb.id:
        raise Conflict("kbId: this transformation belongs to another knowledge base")  # stored rows decide: 409
    if req.rawId is not None:
        raw = RawMaterial.get_or_none((RawMaterial.id == req.rawId) & (RawMaterial.kb == kb.id))
        if raw is None:
            raise NotFound("Raw material not found")
        kind, target_id, title, content = "raw", raw.id, raw.title, raw.text
    else:
        page = Page.get_or_none((Page.kb == kb.id) & (Page.slug == req.slug))
        if page is None:
            raise NotFound("Page not found")
        kind, target_id, title, content = "page", page.id, page.title, page.markdown
    if not (content or "").strip():
        raise Conflict("The target holds no text")
    run = TransformationRun(
        transformation=t.id,
        kb=kb.id,
        workspace_id=caller.workspace_id,
        user_id=caller.user_id,
        target_type=kind,
        target_id=target_id,
        target_title=title[:200],
    )
    audit.save(caller, "CREATE", "WIKI_TRANSFORMATION_RUN", run, f"{t.name} on {kind} {title}"[:300])
    return run, fill(t.prompt, title, content)


def start_aggregate(caller: Caller, tid: int, kb_id: int) -> tuple[TransformationRun, str]:
    t = get(caller, tid)
    kb = kbs.get_kb(caller, kb_id)
    done = list(
        TransformationRun.select()
        .where(
            (TransformationRun.transformation == t.id)
            & (TransformationRun.kb == kb.id)
            & (TransformationRun.status == "completed")
            & (TransformationRun.target_type != "kb")
        )
        .order_by(TransformationRun.create_time)
    )
    if not done:
        raise Conflict("No completed run of this transformation in this knowledge base to aggregate")
    parts = [f"## {r.target_title}\n\n{r.output}" for r in done]
    prompt = (
        f'Below are the results of the transformation "{t.name}" applied to {len(done)} items of the '
        f"knowledge base {kb.name}. Combine them into one coherent Markdown page for the whole knowledge "
        f"base, keeping every distinct point and any [[wikilinks]].\n\n" + "\n\n".join(parts)
    )[:MAX_CONTENT_CHARS]
    run = TransformationRun(
        transformation=t.id,
        kb=kb.id,
        workspace_id=caller.workspace_id,
        user_id=caller.user_id,
        target_type="kb",
        target_id=kb.id,
        target_title=f"{t.name}: {kb.name}"[:200],
    )
    audit.save(caller, "CREATE", "WIKI_TRANSFORMATION_RUN", run, f"aggregate {t.name} over {len(done)} runs")
    return run, prompt


def _finish(run_id: int, status: str, output: str | None, error: str | None) -> TransformationRun | None:
    with database.atomic():
        run = TransformationRun.get_or_none(TransformationRun.id == run_id)
        if run is None or run.status != "running":
            return None  # deleted or cancelled meanwhile
        run.status, run.output, run.error, run.end_time = status, output, error, utcnow()
        run.save()
    return run


def _sources(run: TransformationRun) -> tuple[list[int], list[int]]:
    """Chunk and material ids a run's page cites: the material's chunks, or the page's own citations."""
    if run.target_type == "raw" and run.target_id is not None:
        chunks = [c.id for c in Chunk.select(Chunk.id).where(Chunk.raw == run.target_id).limit(50)]
        return chunks, [run.target_id]
    if run.target_type == "page" and run.target_id is not None:
        return [c.chunk_id for c in PageCitation.select(PageCitation.chunk).where(PageCitation.page == run.target_id)], []
    return [], []


def save_as_page(caller: Caller | None, run: TransformationRun, slug: str | None, title: str | None) -> dict[str, Any]:
    if run.status != "completed" or not run.output:
        raise Conflict(f"Only a completed run can be saved as a page (status: {run.status})")
    kb = KnowledgeBase.get_by_id(run.kb_id)
    t = Transformation.get_by_id(run.transformation_id)
    chunks, raws = _sources(run)
    page = synthesis.save_page(
        caller, kb, slug or f"{t.name} {run.target_title}", title or f"{t.name}: {run.target_title}", run.output, "transformation", chunks, raws
    )
    TransformationRun.update(page_slug=page.slug).where(TransformationRun.id == run.id).execute()
    run.page_slug = page.slug
    return {**run_dict(run), "page": {"slug": page.slug, "title": page.title, "pageType": page.page_type}}


def _running_runs() -> list[str]:
    return [str(r.id) for r in TransformationRun.select(TransformationRun.id).where(TransformationRun.status == "running")]


def fail_lost(ids: list[str]) -> int:
    """Runs whose process was killed (their lease lapsed): failed, saying so."""
    done = TransformationRun.update(status="failed", error=LOST_ERROR, end_time=utcnow()).where(
        TransformationRun.id.in_([int(i) for i in ids]) & (TransformationRun.status == "running")
    )
    return int(done.execute())


RUNS = RunKind("wiki-transform:", _running_runs, fail_lost)  # leased while they run here (platform_server/leases.py)


class Transformer:
    """Runs' tasks; `platform.runtime(WIKI).transformer`."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.tasks: dict[int, asyncio.Task[None]] = {}

    def interrupted(self) -> None:
        """Runs left `running` by a stop."""
        TransformationRun.update(status="failed", error="Interrupted by a restart", end_time=utcnow()).where(
            TransformationRun.status == "running"
        ).execute()

    def launch(self, run: TransformationRun, prompt: str) -> None:
        task = self.engine.spawn(self.execute(run.id, prompt))
        self.tasks[run.id] = task
        leases.hold(RUNS, run.id)
        task.add_done_callback(lambda _: self._ended(run.id))

    def _ended(self, run_id: int) -> None:
        self.tasks.pop(run_id, None)
        leases.release(RUNS, run_id)

    def cancel(self, run_id: int) -> None:
        task = self.tasks.get(run_id)
        if task is not None:
            task.cancel()

    async def execute(self, run_id: int, prompt: str) -> None:
        """Ask the model and record the run's end (an aggregate is saved as its page)."""
        run = TransformationRun.get_or_none(TransformationRun.id == run_id)
        if run is None:
            return
        kb = KnowledgeBase.get_by_id(run.kb_id)
        meter.enter("transform", kb.workspace_id, run.user_id)  # this task's model calls
        cfg = kbs.config_of(kb)
        targets = resolve_targets(cfg["generationModelName"], cfg["generationModelProvider"], [])
        request = ChatRequest(model="", messages=[ChatMessage("user", prompt)], temperature=0.3)
        try:
            _, result = await self.engine.llm.chat(targets, request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the run records why
            message = failure_text(exc, "wiki transform")
            _finish(run_id, "failed", None, f"{type(exc).__name__}: {message}"[:2000])
            return
        output = str(result.content or "").strip()
        if not output:
            _finish(run_id, "failed", None, "The model answered nothing")
            return
        done = _finish(run_id, "completed", output, None)
        if done is not None and done.target_type == "kb":
            try:
                save_as_page(None, done, None, None)
            except Exception:  # noqa: BLE001 - the run stays completed; its page can be saved again
                log.warning("saving aggregate run %s failed", run_id, exc_info=True)


def mark_cancelled(caller: Caller, run_id: int) -> TransformationRun:
    with database.atomic():
        run = get_run(caller, run_id)
        if run.status != "running":
            raise Conflict(f"Only a running run can be cancelled (status: {run.status})")
        run.status, run.error, run.end_time = "cancelled", "Cancelled by request", utcnow()
        run.save()
        audit.record(caller, "UPDATE", "WIKI_TRANSFORMATION_RUN", run.id, "cancel")
    return run


def delete_run(caller: Caller, run_id: int) -> None:
    with database.atomic():
        run = get_run(caller, run_id)
        run.delete_instance()
        audit.record(caller, "DELETE", "WIKI_TRANSFORMATION_RUN", run_id, f"run of {run.target_title}"[:300])
