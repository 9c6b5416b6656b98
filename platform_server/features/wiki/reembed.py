"""Vectors follow the embedding model: every chunk and page vector records the model that made it.

A KB's current model is its `embeddingModelId`, else the default embedding model. Searches compare the
query only with vectors of the model that embedded the query (`search.model_filter`), so after a
switch the old vectors are never mixed in (same dimensions or not): they wait, found by keywords only,
while this loop embeds them again in the background, in batches, with progress in the KB's
processing status (`reembed`) and progress stream (`reembed` events). It notices a switch however it
happened (default set, model disabled or deleted, KB config) at its next tick.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from platform_server.blocking import run_blocking
from platform_server.db import database, iso, utcnow
from platform_server.features.models.errors import failure_text
from platform_server.features.settings import service as settings
from platform_server.features.usage import meter
from platform_server.features.wiki import search
from platform_server.features.wiki.kbs import embedding_model as current_model
from platform_server.features.wiki.models import Chunk, KnowledgeBase, Page
from platform_server.loops import Loop

if TYPE_CHECKING:
    from platform_server.features.wiki.engine import WikiEngine

log = logging.getLogger(__name__)

BATCH = 64  # texts per embedding call
PAGE_TEXT = 4000  # characters of a page's markdown embedded with its title (as the engine does)


def _current(kb_id: int) -> int | None:
    """The KB's current embedding model, read afresh (None: no model, or the KB is gone)."""
    kb = KnowledgeBase.get_or_none(KnowledgeBase.id == kb_id)
    return current_model(kb) if kb is not None else None


def page_text(title: str, markdown: str) -> str:
    return f"{title}\n\n{markdown[:PAGE_TEXT]}"


def _stale(model: Any, kb_id: int, current: int) -> Any:
    return (model.kb == kb_id) & model.embedding.is_null(False) & (model.embed_model.is_null() | (model.embed_model != current))


def stale_count(kb_id: int, current: int) -> int:
    """Vectors of the KB not made by its current model (blocking)."""
    return int(Chunk.select().where(_stale(Chunk, kb_id, current)).count() + Page.select().where(_stale(Page, kb_id, current)).count())


def _next_batch(kb_id: int, current: int) -> tuple[str, list[tuple[int, int, str]]]:
    """("chunk"|"page", [(id, version, text)]) of vectors to embed again; ("", []) when none is left (blocking)."""
    chunks = Chunk.select(Chunk.id, Chunk.text).where(_stale(Chunk, kb_id, current)).order_by(Chunk.id).limit(BATCH)
    rows = [(c.id, 0, c.text) for c in chunks]
    if rows:
        return "chunk", rows
    pages = Page.select(Page.id, Page.version, Page.title, Page.markdown).where(_stale(Page, kb_id, current)).order_by(Page.id).limit(BATCH)
    return "page", [(p.id, p.version, page_text(p.title, p.markdown)) for p in pages]


def _write(kind: str, rows: list[tuple[int, int, str]], vectors: list[list[float]], current: int) -> None:
    """Store the new vectors; a page edited since it was read keeps its (newer) vector (blocking)."""
    with database.atomic():
        for (row_id, version, _), vector in zip(rows, vectors):
            blob = search.pack(vector)
            if kind == "chunk":
                Chunk.update(embedding=blob, dims=len(blob) // 4, embed_model=current).where(Chunk.id == row_id).execute()
            else:
                Page.update(embedding=blob, dims=len(blob) // 4, embed_model=current).where((Page.id == row_id) & (Page.version == version)).execute()


class Reembedder(Loop):
    """Embeds again, KB by KB, the vectors its current embedding model did not make."""

    def __init__(self, engine: WikiEngine) -> None:
        super().__init__()
        self.engine = engine
        self.interval_s = max(0.05, float(engine.config.wiki_reembed_check_s))
        self.jobs: dict[int, dict[str, Any]] = {}  # kb id -> the latest re-embedding of it

    def wake(self) -> None:
        """Check now rather than at the next tick (a KB's model was just changed)."""
        self.engine.spawn(self._safe_tick())

    async def tick(self) -> None:
        if not settings.is_enabled("wiki"):  # the `wiki` flag is off: no background model calls
            return
        for kb in list(KnowledgeBase.select()):
            current = await run_blocking(current_model, kb)
            if current is None:
                continue
            total = await run_blocking(stale_count, kb.id, current)
            if total:
                await self._run(kb, current, total)

    async def _run(self, kb: KnowledgeBase, current: int, total: int) -> None:
        job: dict[str, Any] = {
            "state": "running",
            "modelId": str(current),
            "done": 0,
            "total": total,
            "error": None,
            "startTime": iso(utcnow()),
            "endTime": None,
        }
        self.jobs[kb.id] = job
        self._emit(kb.id, job)
        try:
            with meter.scope("wiki", kb.workspace_id):
                while True:
                    if await run_blocking(_current, kb.id) != current:
                        job["state"], job["error"] = "superseded", "The embedding model changed again"
                        break  # the next tick starts over with the new model
                    kind, rows = await run_blocking(_next_batch, kb.id, current)
                    if not rows:
                        job["state"] = "completed"
                        break
                    vectors = await self.engine.llm.embed([text for _, _, text in rows], current)
                    await run_blocking(_write, kind, rows, vectors, current)
                    job["done"] = min(total, job["done"] + len(rows))
                    self._emit(kb.id, job)
        except Exception as exc:  # noqa: BLE001 - kept in the job; the next tick tries again
            log.warning("re-embedding KB %s failed", kb.id, exc_info=True)
            job["state"], job["error"] = "failed", failure_text(exc, "wiki re-embedding")[:500]
        job["endTime"] = iso(utcnow())
        self._emit(kb.id, job)

    def _emit(self, kb_id: int, job: dict[str, Any]) -> None:
        self.engine.emit(kb_id, {"type": "reembed", "kbId": str(kb_id), **job})

    def status(self, kb_id: int) -> dict[str, Any] | None:
        """The KB's latest re-embedding `{state: running|completed|failed|superseded, modelId, done, total, error, startTime, endTime}`."""
        job = self.jobs.get(kb_id)
        return dict(job) if job is not None else None
