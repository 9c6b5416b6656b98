"""Running a KB's pipeline on one material: each step timed and recorded in a PipelineRun."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Coroutine

from platform_server.blocking import run_blocking
from platform_server.db import iso, utcnow
from platform_server.features.models.errors import failure_text
from platform_server.features.wiki import pages as page_service
from platform_server.features.wiki import transform
from platform_server.features.wiki.kbs import config_of, embedding_model
from platform_server.features.wiki.models import (
    Job,
    KnowledgeBase,
    Page,
    Pipeline,
    PipelineRun,
    RawMaterial,
    Transformation,
    TransformationRun,
)
from platform_server.features.wiki.raw import stored_path
from platform_server.features.wiki.text import chunk_text, extract_text

if TYPE_CHECKING:
    from platform_server.features.wiki.engine import WikiEngine


class Unchanged(Exception):
    """The material's content is what was processed last time: the remaining steps are skipped."""


@dataclass
class State:
    text: str = ""
    pieces: list[str] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)
    chunk_ids: list[int] = field(default_factory=list)
    written: set[int] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)


Step = Callable[["WikiEngine", KnowledgeBase, RawMaterial, Job, dict[str, Any], State], Coroutine[Any, Any, dict[str, Any]]]


async def _extract(engine: WikiEngine, kb: KnowledgeBase, raw: RawMaterial, job: Job, step: dict[str, Any], st: State) -> dict[str, Any]:
    text = raw.text
    if not text:
        data = await run_blocking(stored_path(engine.config, raw).read_bytes)
        text = await run_blocking(extract_text, data, raw.content_type)
    st.text = text
    if raw.last_processed_hash and raw.last_processed_hash == raw.content_hash:
        raise Unchanged()
    return {"chars": len(text)}


async def _chunk(engine: WikiEngine, kb: KnowledgeBase, raw: RawMaterial, job: Job, step: dict[str, Any], st: State) -> dict[str, Any]:
    cfg = config_of(kb)
    size, overlap = int(step.get("size", cfg["chunkSize"])), int(step.get("overlap", cfg["chunkOverlap"]))
    st.pieces = await run_blocking(chunk_text, st.text, size, overlap)
    if not st.pieces:
        raise ValueError("The material holds no text")
    return {"chunks": len(st.pieces)}


async def _embed(engine: WikiEngine, kb: KnowledgeBase, raw: RawMaterial, job: Job, step: dict[str, Any], st: State) -> dict[str, Any]:
    model_id = embedding_model(kb)  # named, so the vectors record the model that made them
    vectors: list[list[float]] = []
    for i in range(0, len(st.pieces), 64):
        vectors += await engine.llm.embed(st.pieces[i : i + 64], model_id)
    st.blobs, st.chunk_ids = await engine.store_chunks(kb, raw, st.pieces, vectors, model_id)
    return {"chunks": len(st.chunk_ids)}


async def _synthesize(engine: WikiEngine, kb: KnowledgeBase, raw: RawMaterial, job: Job, step: dict[str, Any], st: State) -> dict[str, Any]:
    cfg = config_of(kb)
    per_call = int(step.get("maxChunksPerCall", cfg["maxChunksPerCall"]))
    model_id = embedding_model(kb)
    batches = [list(range(i, min(i + per_call, len(st.pieces)))) for i in range(0, len(st.pieces), per_call)]
    for n, batch in enumerate(batches, start=1):
        try:
            ids = await engine.write_pages(kb, raw, cfg, [(st.chunk_ids[i], st.pieces[i]) for i in batch], [st.blobs[i] for i in batch], model_id)
            st.written.update(ids)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one failed batch makes the material partial
            message = failure_text(exc, "wiki pipeline step")
            st.failures.append(f"batch {n}: {message}"[:500])
    if len(st.failures) == len(batches):
        raise ValueError("; ".join(st.failures)[:2000])
    return {"batches": len(batches), "failedBatches": len(st.failures), "pages": len(st.written)}


async def _link(engine: WikiEngine, kb: KnowledgeBase, raw: RawMaterial, job: Job, step: dict[str, Any], st: State) -> dict[str, Any]:
    keys = page_service.resolver(kb.id)
    broken = 0
    for page in Page.select().where(Page.id.in_(list(st.written) or [0])):
        page_service.set_links(page)
        broken += sum(1 for link in page_service.wikilinks(page.markdown) if link.slug not in keys)
    return {"pages": len(st.written), "brokenLinks": broken}


async def _transform(engine: WikiEngine, kb: KnowledgeBase, raw: RawMaterial, job: Job, step: dict[str, Any], st: State) -> dict[str, Any]:
    t = Transformation.get_or_none(Transformation.id == int(step["transformationId"]))
    if t is None:
        raise ValueError("The transformation was deleted")
    run = TransformationRun.create(
        transformation=t.id, kb=kb.id, workspace_id=kb.workspace_id, user_id=None, target_type="raw", target_id=raw.id, target_title=raw.title[:200]
    )
    await engine.transformer.execute(run.id, transform.fill(t.prompt, raw.title, st.text))
    run = TransformationRun.get_by_id(run.id)
    if run.status != "completed":
        raise ValueError(f"transformation run {run.id}: {run.error or run.status}")
    detail: dict[str, Any] = {"transformationRunId": str(run.id)}
    if step.get("saveAsPage"):
        detail["pageSlug"] = transform.save_as_page(None, run, None, None)["page"]["slug"]
    return detail


STEPS: dict[str, Step] = {"extract": _extract, "chunk": _chunk, "embed": _embed, "synthesize": _synthesize, "link": _link, "transform": _transform}


def _save(run: PipelineRun) -> None:
    if PipelineRun.get_or_none(PipelineRun.id == run.id) is not None:
        run.save()


async def execute(engine: WikiEngine, kb: KnowledgeBase, raw: RawMaterial, job: Job, pipeline: Pipeline) -> tuple[str, str | None, int]:
    """Run the pipeline's steps; returns (status, error, pages written) like the built-in steps."""
    run = PipelineRun.create(pipeline=pipeline.id, kb=kb.id, raw_id=raw.id, steps=[])
    st = State()
    status, error = "completed", None
    for step in pipeline.steps:
        kind = step["type"]
        entry: dict[str, Any] = {
            "type": kind,
            "status": "running",
            "startTime": iso(utcnow()),
            "endTime": None,
            "durationMs": None,
            "error": None,
            "detail": {},
        }
        run.steps = [*run.steps, entry]
        _save(run)
        engine.step(job, raw, kind, "started", pipelineRunId=str(run.id))
        started = time.monotonic()
        try:
            entry["detail"] = await STEPS[kind](engine, kb, raw, job, step, st)
            entry["status"] = "completed"
        except Unchanged:
            entry["status"], entry["detail"] = "completed", {"unchanged": True, "chars": len(st.text)}
            status, error = "completed", "unchanged"
        except (asyncio.CancelledError, engine.cancelled_error):
            entry["status"] = "cancelled"
            run.status, run.end_time = "cancelled", utcnow()
            _finish_entry(entry, started)
            _save(run)
            raise
        except Exception as exc:  # noqa: BLE001 - the step and the run record why
            message = failure_text(exc, "wiki pipeline step")
            entry["status"], entry["error"] = "failed", f"{type(exc).__name__}: {message}"[:1000]
            status, error = "failed", entry["error"]
        _finish_entry(entry, started)
        run.steps = [*run.steps[:-1], entry]
        _save(run)
        engine.step(job, raw, kind, entry["status"], pipelineRunId=str(run.id), **entry["detail"])
        if entry["status"] == "failed" or error == "unchanged":
            break
    done = {e["type"] for e in run.steps}
    run.steps = [
        *run.steps,
        *(
            {"type": s["type"], "status": "skipped", "startTime": None, "endTime": None, "durationMs": None, "error": None, "detail": {}}
            for s in pipeline.steps
            if s["type"] not in done
        ),
    ]
    if status == "completed" and st.failures:
        status, error = "partial", "; ".join(st.failures)[:2000]
    run.status, run.error, run.end_time = status, None if error == "unchanged" else error, utcnow()
    _save(run)
    return status, error, len(st.written)


def _finish_entry(entry: dict[str, Any], started: float) -> None:
    entry["endTime"] = iso(utcnow())
    entry["durationMs"] = int((time.monotonic() - started) * 1000)
