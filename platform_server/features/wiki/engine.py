"""The processing engine: a queue of materials, bounded workers, the pipeline, progress fan-out.

Per material: extract text -> chunk -> embed chunks -> ask the LLM for pages in batches of chunks ->
store pages, links and citations. The queue is the database (`status = 'pending' AND queued`): a worker
claims the oldest queued material with a conditional update (pending -> processing), so of several
processes exactly one takes each material, and a material accepted by a process that died before
starting it is taken by another (issue 31). In memory are only a wake-up, running tasks and subscribers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Iterable, cast

from platform_server import leases, storage
from platform_server.blocking import run_blocking
from platform_server.db import database, iso, utcnow
from platform_server.features.models.capabilities import able
from platform_server.features.models.errors import LlmFailure, failure_text
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.usage import meter
from platform_server.features.wiki import generate, hot_cache, notes, pipeline_exec, pipelines, profile, search, sync
from platform_server.features.wiki.kbs import config_of, embedding_model
from platform_server.features.wiki.models import (
    Chunk,
    Job,
    KnowledgeBase,
    LintRun,
    Page,
    PageCitation,
    PageSource,
    RawMaterial,
)
from platform_server.features.wiki.pages import set_links
from platform_server.features.wiki.raw import stored_path
from platform_server.features.wiki.reembed import Reembedder
from platform_server.features.wiki.research import Researcher
from platform_server.features.wiki.text import chunk_text, extract_text
from platform_server.features.wiki.transform import Transformer
from platform_server.features.wiki.watcher import Watchers
from platform_server.integrations.llm.types import ChatRequest
from platform_server.lazy import lazy_import
from platform_server.leases import RunKind
from platform_server.ports import events, leader
from platform_server.ports.events import Subscription, TopicBus

if TYPE_CHECKING:
    import numpy as np

    from platform_server.config import Config
    from platform_server.features.models.runtime import LlmRouter
    from platform_server.storage import StorageHealth
else:
    np = lazy_import("numpy")

log = logging.getLogger(__name__)

EMBED_BATCH = 64
WRITE_LOCK = "IMMEDIATE"  # executor transactions that read then write take SQLite's write lock at BEGIN
CONTEXT_PAGES = 3
SUPERSEDED = "Cancelled, and claimed again before its processing stopped"
CLAIM_TRIES = 8  # queued materials a worker tries in one look (others' claims may win the first ones)


class Cancelled(Exception):
    """The material was cancelled or deleted while it was being processed."""


def _processing_ids() -> list[str]:
    return [str(r.id) for r in RawMaterial.select(RawMaterial.id).where(RawMaterial.status == "processing")]


class WikiEngine:
    """`platform.runtime(WIKI)`: owns the workers and the progress subscribers."""

    def __init__(self, router: LlmRouter, config: Config, health: StorageHealth, workers: int = 1) -> None:
        self.llm = router
        self.config = config
        self.health = health  # a write that fails on a full disk turns read-only mode on
        self.worker_count = max(1, workers)
        self.wake = asyncio.Event()  # set when a material was queued here: idle workers look in the database
        # Several processes (`redis_url`): an idle worker also looks every sweep interval, for materials another
        # process accepted and can no longer start (it was killed); one process is woken by its own queueing only.
        self.poll_s: float | None = leases.Sweep.interval_s if config.redis_url else None
        self.running: dict[int, asyncio.Task[None]] = {}
        self.claims: dict[int, int] = {}  # raw id -> the job of this process's claim (read by `_alive`, in executors too)
        self.steps: dict[int, dict[str, Any]] = {}  # raw id -> its latest step event
        self.progress: TopicBus[int] = events.current().topics("wiki-progress")  # progress events by knowledge base id
        self.workers: list[asyncio.Task[None]] = []
        self.tasks: set[asyncio.Task[Any]] = set()  # other background work (lint scans, ...)
        self.produced: dict[int, set[int]] = {}  # raw id -> pages its running processing wrote
        self.stopping = False
        self.watchers = Watchers(self)
        self.research = Researcher(self)
        self.transformer = Transformer(self)
        self.reembed = Reembedder(self)
        # leased while processed here (platform_server/leases.py): the leader queues a killed process's again
        self.materials = RunKind("wiki-material:", _processing_ids, self._lost)

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Materials left `processing` by a stop go back to pending; the workers then take every queued one."""
        # several processes: only the leader at its start (a joining process leaves the others' running work alone;
        # a killed process's is requeued by the lease sweep)
        if leader.is_leader():
            storage.start_write(self.health, "resetting interrupted wiki work", self._reset_interrupted)
        self.workers = [asyncio.ensure_future(self._worker()) for _ in range(self.worker_count)]
        self.reembed.start()

    def _reset_interrupted(self) -> None:
        with database.atomic():
            if not self.config.redis_url:  # with several processes, leased: a live one's are its own, a dead one's are swept
                RawMaterial.update(status="pending", queued=True).where(RawMaterial.status == "processing").execute()
                Job.update(status="interrupted", end_time=utcnow()).where(Job.status == "running").execute()
                self.transformer.interrupted()
            LintRun.update(status="failed", error="Interrupted by a restart", end_time=utcnow()).where(LintRun.status == "running").execute()

    async def stop(self) -> None:
        self.stopping = True
        self.reembed.stop()
        await self.watchers.stop()
        tasks = self.workers + list(self.running.values()) + list(self.tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.progress.close()

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run background work owned by the engine (cancelled on stop)."""
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    # ---- queue ----------------------------------------------------------------------------

    def enqueue(self, raw_id: int) -> None:
        """Wake the workers: the material's row is already stored queued (the caller committed it)."""
        self.wake.set()

    def _lost(self, ids: list[str]) -> int:
        """Materials whose process was killed mid-processing (their lease lapsed): queued again."""
        raw_ids = [int(i) for i in ids]
        with database.atomic():
            count = (
                RawMaterial.update(status="pending", queued=True).where(RawMaterial.id.in_(raw_ids) & (RawMaterial.status == "processing")).execute()
            )
            Job.update(status="interrupted", end_time=utcnow()).where(Job.raw_id.in_(raw_ids) & (Job.status == "running")).execute()
        self.wake.set()
        return int(count)

    def cancel(self, raw_id: int) -> None:
        """Stop the material's running task, if it runs here (its row is already marked by the caller)."""
        task = self.running.get(raw_id)
        if task is not None:
            task.cancel()

    def _claim(self) -> tuple[RawMaterial, Job] | None:
        """The oldest queued material, taken for this process (pending -> processing) with its job; None when none is left.

        The update's condition is the lock: of processes claiming one material at once, one changes the row and the
        others change nothing (PostgreSQL re-reads the row after the winner commits) and try the next one."""
        q = RawMaterial.select(RawMaterial.id).where((RawMaterial.status == "pending") & (RawMaterial.queued == 1))
        for row in q.order_by(RawMaterial.create_time, RawMaterial.id).limit(CLAIM_TRIES):
            with database.atomic():
                taken = (
                    RawMaterial.update(status="processing", error=None, update_time=utcnow())
                    .where((RawMaterial.id == row.id) & (RawMaterial.status == "pending") & (RawMaterial.queued == 1))
                    .execute()
                )
                if not taken:
                    continue
                raw = RawMaterial.get_by_id(row.id)
                # A job still running is an earlier claim cancelled and requeued meanwhile (through another process, whose
                # cancel could not stop the task here): superseded now, so its task stops at its next check (`_alive`).
                earlier = (Job.raw_id == raw.id) & (Job.status == "running")
                Job.update(status="cancelled", error=SUPERSEDED, end_time=utcnow()).where(earlier).execute()
                job = Job.create(kb=raw.kb_id, raw_id=raw.id, status="running", steps=[])
            self.claims[raw.id] = job.id
            return raw, job
        return None

    async def _idle(self) -> None:
        """Wait for a wake-up (or, with several processes, the next look at the database)."""
        if self.poll_s is None:
            await self.wake.wait()
            return
        try:
            await asyncio.wait_for(self.wake.wait(), self.poll_s)
        except asyncio.TimeoutError:
            pass

    async def _worker(self) -> None:
        while True:
            self.wake.clear()  # before the look: a material queued after it sets it again, so none is missed
            try:
                claimed = self._claim()
            except Exception:  # noqa: BLE001 - a failed look (the database busy, the disk full) must not end the worker
                log.warning("looking for queued wiki materials failed", exc_info=True)
                claimed = None
            if claimed is None:
                await self._idle()
                continue
            raw, job = claimed
            leases.hold(self.materials, raw.id)  # at once: no await between the claim and the lease
            task = asyncio.ensure_future(self._process(raw, job))
            self.running[raw.id] = task
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                task.cancel()
                raise
            finally:
                self.running.pop(raw.id, None)
                self.claims.pop(raw.id, None)
                self.steps.pop(raw.id, None)
                leases.release(self.materials, raw.id)
            if not task.cancelled() and task.exception() is not None:
                log.error("wiki processing of %s crashed", raw.id, exc_info=task.exception())

    # ---- progress -------------------------------------------------------------------------

    def subscribe(self, kb_id: int) -> Subscription:
        return self.progress.subscribe(kb_id)

    def emit(self, kb_id: int, event: dict[str, Any]) -> None:
        self.progress.publish(kb_id, event["type"], event)

    def busy(self, kb_id: int) -> bool:
        """Whether the KB has a material processing or waiting in the queue."""
        q = RawMaterial.select().where(
            (RawMaterial.kb == kb_id) & ((RawMaterial.status == "processing") | ((RawMaterial.status == "pending") & (RawMaterial.queued == 1)))
        )
        return q.exists()

    def _material_event(self, raw: RawMaterial, status: str, **extra: Any) -> None:
        self.emit(raw.kb_id, {"type": "material", "kbId": str(raw.kb_id), "rawId": str(raw.id), "title": raw.title, "status": status, **extra})

    def _step(self, job: Job, raw: RawMaterial, step: str, status: str, **detail: Any) -> None:
        self._alive(raw.id)
        entry = {"step": step, "status": status, "at": iso(utcnow()), **detail}
        job.steps = [*job.steps, entry]
        job.save(only=[Job.steps])
        event = {"type": "step", "kbId": str(raw.kb_id), "rawId": str(raw.id), "jobId": str(job.id), **entry}
        self.steps[raw.id] = event
        self.emit(raw.kb_id, event)

    def _alive(self, raw_id: int) -> RawMaterial:
        """The material, while this process's claim of it holds (raises Cancelled once it was cancelled, deleted, or
        claimed again after a cancel: the job of our claim no longer runs)."""
        raw = RawMaterial.get_or_none(RawMaterial.id == raw_id)
        if raw is None or raw.status != "processing":
            raise Cancelled()
        job_id = self.claims.get(raw_id)
        if job_id is not None and not Job.select().where((Job.id == job_id) & (Job.status == "running")).exists():
            raise Cancelled()
        return raw

    # ---- the pipeline ---------------------------------------------------------------------

    cancelled_error = Cancelled  # what a step raises when its material was cancelled

    def step(self, job: Job, raw: RawMaterial, step: str, status: str, **detail: Any) -> None:
        """Record and broadcast a step of a material's processing (raises Cancelled when it was cancelled)."""
        self._step(job, raw, step, status, **detail)

    async def store_chunks(
        self, kb: KnowledgeBase, raw: RawMaterial, pieces: list[str], vectors: list[list[float]], model_id: int | None = None
    ) -> tuple[list[bytes], list[int]]:
        """Replace the material's chunks (in an executor); their packed vectors and ids. `model_id`: the vectors' model."""
        return await run_blocking(self._store_chunks, kb, raw, pieces, vectors, model_id)

    async def write_pages(
        self, kb: KnowledgeBase, raw: RawMaterial, cfg: dict[str, Any], chunks: list[tuple[int, str]], blobs: list[bytes], model_id: int | None
    ) -> list[int]:
        """One page-writing call over a batch of chunks; the ids of the pages written."""
        return await self._generate(kb, raw, cfg, chunks, blobs, model_id)

    async def _process(self, raw: RawMaterial, job: Job) -> None:
        """Process a material this process claimed (`_claim`)."""
        raw_id = raw.id
        kb = KnowledgeBase.get_by_id(raw.kb_id)
        meter.enter("wiki", kb.workspace_id)  # this task's model calls count as wiki processing
        self._material_event(raw, "processing", jobId=str(job.id))
        self.produced[raw_id] = set()
        try:
            pipeline = pipelines.active(kb.id)
            if pipeline is not None:
                status, error, pages = await pipeline_exec.execute(self, kb, raw, job, pipeline)
            else:
                status, error, pages = await self._pipeline(kb, raw, job)
        except (asyncio.CancelledError, Cancelled):
            if self.stopping:
                raise
            self.produced.pop(raw_id, None)
            if self._finish_job(job, "cancelled", "Cancelled", 0):  # (a superseded claim says nothing: the new one runs)
                self._material_event(raw, "cancelled", jobId=str(job.id))
                self._maybe_idle(kb.id)
            return
        except Exception as exc:  # noqa: BLE001 - a failing material must not stop the engine
            log.warning("wiki material %s failed", raw_id, exc_info=True)
            status, error, pages = "failed", f"{type(exc).__name__}: {failure_text(exc, f'wiki material {raw_id}')}"[:2000], 0
        produced = self.produced.pop(raw_id, set())
        retired: list[int] = []
        with database.atomic():
            current = RawMaterial.get_or_none(RawMaterial.id == raw_id)
            ours = Job.select().where((Job.id == job.id) & (Job.status == "running")).exists()  # not superseded by a new claim
            if current is not None and current.status == "processing" and ours:
                if status == "completed" and error is None and produced:
                    retired = sync.retire_unproduced(raw_id, produced)
                current.status, current.queued = status, False
                current.error = None if error == "unchanged" else error
                current.update_time = current.processed_time = utcnow()
                if status in ("completed", "partial"):
                    current.last_processed_hash = current.content_hash
                current.save()
        if self._finish_job(job, "skipped" if error == "unchanged" else status, error, pages):
            self._material_event(raw, status, jobId=str(job.id), pagesWritten=pages, error=error, pagesArchived=len(retired))
            self._maybe_idle(kb.id)

    @staticmethod
    def _finish_job(job: Job, status: str, error: str | None, pages: int) -> bool:
        """Record the job's end; False when it no longer runs (the KB was deleted, or a new claim superseded it)."""
        done = Job.update(status=status, error=error, pages_written=pages, end_time=utcnow()).where((Job.id == job.id) & (Job.status == "running"))
        return bool(done.execute())

    def _maybe_idle(self, kb_id: int) -> None:
        if not self.busy(kb_id):
            self.emit(kb_id, {"type": "idle", "kbId": str(kb_id)})
            self.refresh_hot_cache(None, kb_id)

    def refresh_hot_cache(self, caller: Any, kb_id: int) -> dict[str, Any] | None:
        """Rebuild the KB's hot cache in the background (a caller also revives a soft-deleted one)."""
        row = hot_cache.schedule(caller, kb_id)
        if row is not None:
            self.spawn(self._build_hot_cache(kb_id))
        return row

    async def _build_hot_cache(self, kb_id: int) -> None:
        try:
            content, slugs = await run_blocking(hot_cache.digest, kb_id, self.config.wiki_hot_cache_max_tokens)
        except Exception as exc:  # noqa: BLE001 - the row records why
            log.warning("hot cache of KB %s failed", kb_id, exc_info=True)
            hot_cache.store(kb_id, "", [], f"{type(exc).__name__}: {exc}")
            return
        hot_cache.store(kb_id, content, slugs, None)

    async def _pipeline(self, kb: KnowledgeBase, raw: RawMaterial, job: Job) -> tuple[str, str | None, int]:
        """Run the steps; returns (status, error, pages written)."""
        cfg = config_of(kb)
        model_id = embedding_model(kb)  # named, so the vectors record the model that made them
        self._step(job, raw, "extract", "started")
        text = raw.text
        if not text:
            data = await run_blocking(stored_path(self.config, raw).read_bytes)
            text = await run_blocking(extract_text, data, raw.content_type)
        self._step(job, raw, "extract", "completed", chars=len(text))
        if raw.last_processed_hash and raw.last_processed_hash == raw.content_hash:
            self._step(job, raw, "unchanged", "completed")
            return "completed", "unchanged", 0
        pieces = await run_blocking(chunk_text, text, int(cfg["chunkSize"]), int(cfg["chunkOverlap"]))
        self._step(job, raw, "chunk", "completed", chunks=len(pieces))
        if not pieces:
            return "failed", "The material holds no text", 0
        self._step(job, raw, "embed", "started", total=len(pieces))
        vectors: list[list[float]] = []
        for i in range(0, len(pieces), EMBED_BATCH):
            vectors += await self.llm.embed(pieces[i : i + EMBED_BATCH], model_id)
        blobs, chunk_ids = await self.store_chunks(kb, raw, pieces, vectors, model_id)
        self._step(job, raw, "embed", "completed", total=len(pieces))
        reason = self._no_digest(cfg)
        if reason is not None:
            page_id = await self._note_page(kb, raw, text, chunk_ids, model_id)
            self._step(job, raw, "note", "completed", pages=1, reason=reason)
            return "completed", None, 1 if page_id else 0
        per_call = int(cfg["maxChunksPerCall"])
        batches = [list(range(i, min(i + per_call, len(pieces)))) for i in range(0, len(pieces), per_call)]
        failures: list[str] = []
        written: set[int] = set()
        for n, batch in enumerate(batches, start=1):
            self._step(job, raw, "generate", "started", batch=n, total=len(batches))
            try:
                ids = await self._generate(kb, raw, cfg, [(chunk_ids[i], pieces[i]) for i in batch], [blobs[i] for i in batch], model_id)
                written.update(ids)
                self._step(job, raw, "generate", "completed", batch=n, total=len(batches), pages=len(ids))
            except (asyncio.CancelledError, Cancelled):
                raise
            except Exception as exc:  # noqa: BLE001 - one failed batch makes the material partial
                message = failure_text(exc, "wiki page writing")
                failures.append(f"batch {n}: {message}"[:500])
                self._step(job, raw, "generate", "failed", batch=n, total=len(batches), error=message[:500])
        if len(failures) == len(batches):
            return "failed", "; ".join(failures)[:2000], 0
        return ("partial" if failures else "completed"), ("; ".join(failures)[:2000] or None), len(written)

    @staticmethod
    def _no_digest(cfg: dict[str, Any]) -> str | None:
        """Why the LLM digest is not run (each material is then one page as it is), or None to run it."""
        if cfg["pageWriting"] == "notes":
            return "The knowledge base keeps each material as one page"
        try:
            able(resolve_targets(cfg["generationModelName"], cfg["generationModelProvider"], []), "json", "the wiki digest")
        except LlmFailure as exc:
            return str(exc.msg)
        return None

    async def _note_page(self, kb: KnowledgeBase, raw: RawMaterial, text: str, chunk_ids: list[int], model_id: int | None) -> int:
        note = notes.note_of(raw, text)
        vectors = await self.llm.embed([f"{note.title}\n\n{note.markdown[:4000]}"], model_id)
        page_type = str(profile.profile_of(kb)["defaultType"])
        page_id = await run_blocking(notes.store, kb, raw, note, page_type, search.pack(vectors[0]), chunk_ids, self._alive, model_id)
        self.produced.setdefault(raw.id, set()).add(page_id)  # a page the note no longer makes is retired by sync
        return page_id

    def _store_chunks(
        self, kb: KnowledgeBase, raw: RawMaterial, pieces: list[str], vectors: list[list[float]], model_id: int | None
    ) -> tuple[list[bytes], list[int]]:
        """Replace the material's chunks (and their index rows) with the new ones (blocking: a long material writes many rows)."""
        blobs = [search.pack(v) for v in vectors]
        with database.atomic(WRITE_LOCK):  # the write lock up front: the loop may write between our read and write
            self._alive(raw.id)
            old = [c.id for c in Chunk.select(Chunk.id).where(Chunk.raw == raw.id)]
            search.fts_drop_chunks(old)
            Chunk.delete().where(Chunk.raw == raw.id).execute()
            ids = []
            for pos, (text, blob) in enumerate(zip(pieces, blobs)):
                chunk = Chunk.create(kb=kb.id, raw=raw.id, position=pos, text=text, embedding=blob, dims=len(blob) // 4, embed_model=model_id)
                search.fts_put_chunk(chunk.id, kb.id, text)
                ids.append(chunk.id)
            RawMaterial.update(chunk_count=len(ids)).where(RawMaterial.id == raw.id).execute()
        return blobs, ids

    @staticmethod
    def _known_pages(kb_id: int) -> list[tuple[str, str]]:
        return [(p.slug, p.title) for p in Page.select(Page.slug, Page.title).where(Page.kb == kb_id).order_by(Page.slug)]

    def _context_pages(self, kb_id: int, blobs: list[bytes], model_id: int | None) -> list[tuple[str, str, str]]:
        pages = list(Page.select().where((Page.kb == kb_id) & Page.embedding.is_null(False) & (Page.embed_model == model_id)))
        if not pages:
            return []
        mean = search.pack(np.mean([search.unpack(b) for b in blobs], axis=0))
        scores = search.cosine_all(mean, [p.embedding for p in pages])
        ranked = sorted(zip(pages, scores), key=lambda t: -float(t[1]))[:CONTEXT_PAGES]
        return [(p.slug, p.title, p.markdown) for p, s in ranked if float(s) > 0.3]

    async def _generate(
        self, kb: KnowledgeBase, raw: RawMaterial, cfg: dict[str, Any], chunks: list[tuple[int, str]], blobs: list[bytes], model_id: int | None
    ) -> list[int]:
        # Reads over every page of the KB: in an executor, so a large KB does not stall the IOLoop.
        known = await run_blocking(self._known_pages, kb.id)
        context = await run_blocking(self._context_pages, kb.id, blobs, model_id)
        types = profile.profile_of(kb)
        messages = generate.build_messages(kb.name, str(cfg["pageLanguage"]), raw.title, chunks, known, context, types["pageTypes"])
        targets = resolve_targets(cfg["generationModelName"], cfg["generationModelProvider"], [])
        _, result = await self.llm.chat(targets, ChatRequest(model="", messages=messages, temperature=0.2))
        drafts = generate.parse_pages(result.content, [cid for cid, _ in chunks], [t["name"] for t in types["pageTypes"]], types["defaultType"])
        vectors = await self.llm.embed([f"{d.title}\n\n{d.markdown[:4000]}" for d in drafts], model_id)
        ids = await run_blocking(self._store_pages, kb, raw, drafts, vectors, model_id)
        self.produced.setdefault(raw.id, set()).update(ids)
        return ids

    def _store_pages(
        self, kb: KnowledgeBase, raw: RawMaterial, drafts: list[generate.DraftPage], vectors: list[list[float]], model_id: int | None
    ) -> list[int]:
        """Write the drafts with their links, index rows and citations (blocking: in an executor)."""
        blobs = [search.pack(v) for v in vectors]
        ids = []
        with database.atomic(WRITE_LOCK):
            self._alive(raw.id)
            for draft, blob in zip(drafts, blobs):
                page = Page.get_or_none((Page.kb == kb.id) & (Page.slug == draft.slug))
                if page is None:
                    page = Page.create(
                        kb=kb.id,
                        workspace_id=kb.workspace_id,
                        slug=draft.slug,
                        title=draft.title,
                        page_type=draft.page_type,
                        markdown=draft.markdown,
                        embedding=blob,
                        dims=len(blob) // 4,
                        embed_model=model_id,
                    )
                elif sync.hold_for_review(page, raw.id, draft.title, draft.page_type, draft.markdown, blob):
                    page.save(only=[Page.pending, Page.pending_embedding])  # a person's text stays as it is
                else:
                    page.title, page.page_type, page.markdown = draft.title, draft.page_type, draft.markdown
                    page.embedding, page.dims, page.origin, page.embed_model = blob, len(blob) // 4, "generated", model_id
                    sync.revive(page)
                    page.version += 1
                    page.update_time = utcnow()
                    page.save()
                if page.origin != "manual":
                    set_links(page)
                    search.fts_put_page(page)
                PageSource.insert(page=page.id, raw=raw.id).on_conflict_ignore().execute()
                for cid in draft.citations:
                    PageCitation.insert(page=page.id, chunk=cid, kb_id=kb.id).on_conflict_ignore().execute()
                ids.append(page.id)
        return ids

    # ---- status ---------------------------------------------------------------------------

    def status(self, kb_id: int) -> dict[str, Any]:
        counts = {s: 0 for s in ("pending", "processing", "completed", "failed", "partial", "cancelled")}
        materials = []
        q = (
            RawMaterial.select(RawMaterial.id, RawMaterial.title, RawMaterial.status, RawMaterial.queued, RawMaterial.error)
            .where(RawMaterial.kb == kb_id)
            .order_by(RawMaterial.create_time, RawMaterial.id)
            .tuples()
        )
        for raw_id, title, status, queued, error in cast(Iterable[tuple[int, str, str, int, str | None]], q):
            counts[status] = counts.get(status, 0) + 1
            step = self.steps.get(raw_id)
            materials.append(
                {
                    "rawId": str(raw_id),
                    "title": title,
                    "status": status,
                    "queued": bool(queued),
                    "error": error,
                    "step": step["step"] if step and status == "processing" else None,
                }
            )
        return {
            "kbId": str(kb_id),
            "idle": not self.busy(kb_id),
            "counts": counts,
            "total": sum(counts.values()),
            "materials": materials,
            "reembed": self.reembed.status(kb_id),
        }
