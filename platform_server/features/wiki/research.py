"""Deep research over one KB: the model plans queries, searches the KB in rounds, notes findings, writes a report.

A session is a background task owned by the wiki engine; its events (`plan`, `search`, `finding`,
`report`, then `done` or `error`) are kept in the session so a subscriber that comes late replays
them. The report cites pages as [[slug]] and chunks as [cN]; with `saveAsPage` it becomes a
`synthesis` page citing those chunks.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from platform_server.blocking import run_blocking
from platform_server.features.models.capabilities import able
from platform_server.features.models.errors import failure_text
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.usage import meter
from platform_server.features.wiki import kbs, search, synthesis, tool
from platform_server.features.wiki.models import Chunk, KnowledgeBase, Page
from platform_server.features.wiki.schemas import ResearchStart
from platform_server.features.wiki.text import slugify, wikilinks
from platform_server.ids import next_id
from platform_server.integrations.llm.types import ChatMessage, ChatRequest, LlmError
from platform_server.web.context import Caller
from platform_server.web.errors import Forbidden, NotFound

MAX_QUERIES = 4
PAGES_PER_QUERY = 4
CHUNKS_PER_QUERY = 4
RETENTION_S = 1800.0  # finished sessions are kept this long for late subscribers

PLAN_PROMPT = (
    """You research a question in a knowledge base. Answer with JSON only: \
{"queries": ["search query", ...]} with at most %d short keyword queries."""
    % MAX_QUERIES
)
FINDINGS_PROMPT = """You research a question in a knowledge base. From the sources below, note what they \
establish. Answer with JSON only: {"findings": [{"text": "...", "sources": ["p1", "c2"]}], \
"nextQueries": ["..."]}; leave nextQueries empty when the sources answer the question."""
REPORT_PROMPT = """Write a research report in Markdown answering the question from the sources only. Cite \
pages as [[slug]] wikilinks and source chunks by their labels in brackets, e.g. [c1]."""


@dataclass
class Session:
    id: int
    user_id: int
    workspace_id: int
    kb_id: int
    question: str
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    finished: bool = False
    finished_at: float = 0.0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def emit(self, name: str, data: dict[str, Any]) -> None:
        self.events.append((name, {"sessionId": str(self.id), **data}))
        if name in ("done", "error"):
            self.finished, self.finished_at = True, time.monotonic()
        self.changed.set()
        self.changed = asyncio.Event()


@dataclass
class Sources:
    """Everything the searches found, labelled p1.. and c1.. in the order found."""

    pages: dict[int, Page] = field(default_factory=dict)
    chunks: dict[int, dict[str, Any]] = field(default_factory=dict)

    def page_label(self, page_id: int) -> str:
        return f"p{list(self.pages).index(page_id) + 1}"

    def chunk_label(self, chunk_id: int) -> str:
        return f"c{list(self.chunks).index(chunk_id) + 1}"

    def text(self) -> str:
        parts = [f"[{self.page_label(p.id)}] page [[{p.slug}]] ({p.title}):\n{p.markdown[:1500]}" for p in self.pages.values()]
        parts += [f"[{self.chunk_label(cid)}] from {c['rawTitle']}:\n{c['text'][:1200]}" for cid, c in self.chunks.items()]
        return "\n\n".join(parts) or "(nothing found)"


def _json(text: str) -> dict[str, Any]:
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    body = fence.group(1) if fence else text
    start, end = body.find("{"), body.rfind("}")
    try:
        value = json.loads(body[start : end + 1]) if start >= 0 < end else None
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {}


def _strings(value: Any, limit: int) -> list[str]:
    return [str(v).strip()[:300] for v in (value if isinstance(value, list) else []) if str(v).strip()][:limit]


class Researcher:
    """The sessions of one process; `platform.runtime(WIKI).research`."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.sessions: dict[int, Session] = {}

    def start(self, caller: Caller, req: ResearchStart) -> Session:
        kb = kbs.get_kb(caller, req.kbId)
        if req.saveAsPage and not caller.has_role("member"):
            raise Forbidden("saveAsPage: saving a page needs the member role")
        self._prune()
        session = Session(next_id(), caller.user_id, caller.workspace_id, kb.id, req.question.strip())
        self.sessions[session.id] = session
        self.engine.spawn(self._run(session, kb, req.rounds, req.saveAsPage))
        return session

    def get(self, caller: Caller, session_id: int) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.user_id != caller.user_id:
            raise NotFound("Research session not found")
        return session

    def _prune(self) -> None:
        now = time.monotonic()
        for sid in [s.id for s in self.sessions.values() if s.finished and now - s.finished_at > RETENTION_S]:
            self.sessions.pop(sid, None)

    async def _ask(self, kb: KnowledgeBase, system: str, user: str) -> str:
        cfg = kbs.config_of(kb)
        targets = able(resolve_targets(cfg["generationModelName"], cfg["generationModelProvider"], []), "json", "wiki research")
        messages = [ChatMessage("system", system), ChatMessage("user", user)]
        _, result = await self.engine.llm.chat(targets, ChatRequest(model="", messages=messages, temperature=0.2))
        return str(result.content or "")

    async def _search(self, kb: KnowledgeBase, query: str, sources: Sources) -> dict[str, Any]:
        got = await tool.embed_query(self.engine.llm, kb, query)
        hits = await run_blocking(search.search_pages, [kb.id], query, got.vector, PAGES_PER_QUERY, False, got.model_id)
        chunks = await run_blocking(search.search_chunks, [kb.id], query, got.vector, CHUNKS_PER_QUERY, got.model_id)
        for h in hits:
            sources.pages.setdefault(h.page.id, h.page)
        texts = {c.id: c.text for c in Chunk.select(Chunk.id, Chunk.text).where(Chunk.id.in_([int(c["chunkId"]) for c in chunks] or [0]))}
        for c in chunks:
            sources.chunks.setdefault(int(c["chunkId"]), {**c, "text": texts.get(int(c["chunkId"]), "")})
        return {
            "query": query,
            "pages": [{"slug": h.page.slug, "title": h.page.title, "score": round(h.score, 4)} for h in hits],
            "chunks": [{"chunkId": c["chunkId"], "rawTitle": c["rawTitle"], "score": c["score"]} for c in chunks],
        }

    async def _run(self, session: Session, kb: KnowledgeBase, rounds: int, save: bool) -> None:
        meter.enter("research", session.workspace_id, session.user_id)  # this task's model calls, embeddings included
        try:
            plan = _json(await self._ask(kb, PLAN_PROMPT, f"Question: {session.question}"))
            queries = _strings(plan.get("queries"), MAX_QUERIES) or [session.question]
            session.emit("plan", {"question": session.question, "queries": queries, "rounds": rounds})
            sources = Sources()
            findings: list[dict[str, Any]] = []
            for round_no in range(1, rounds + 1):
                for query in queries:
                    found = await self._search(kb, query, sources)
                    session.emit("search", {"round": round_no, **found})
                answer = _json(await self._ask(kb, FINDINGS_PROMPT, f"Question: {session.question}\n\nSources:\n{sources.text()}"))
                listed = answer.get("findings")
                for item in (listed if isinstance(listed, list) else [])[:10]:
                    if isinstance(item, dict) and str(item.get("text") or "").strip():
                        finding = {"round": round_no, "text": str(item["text"])[:2000], "sources": _strings(item.get("sources"), 10)}
                        findings.append(finding)
                        session.emit("finding", finding)
                queries = _strings(answer.get("nextQueries"), MAX_QUERIES)
                if not queries:
                    break
            noted = "\n".join(f"- {f['text']} ({', '.join(f['sources'])})" for f in findings) or "(none)"
            report = await self._ask(kb, REPORT_PROMPT, f"Question: {session.question}\n\nFindings:\n{noted}\n\nSources:\n{sources.text()}")
            cited = self._citations(report, sources)
            saved = self._save(session, kb, report, cited["chunkIds"]) if save else None
            session.emit("report", {"markdown": report, "pages": cited["pages"], "chunks": cited["chunks"], "pageSlug": saved})
            session.emit("done", {"pageSlug": saved, "findings": len(findings)})
        except asyncio.CancelledError:
            session.emit("error", {"message": "The research was stopped"})
            raise
        except Exception as exc:  # noqa: BLE001 - the subscriber hears why
            if isinstance(exc, LlmError):  # the provider's URL and answer go to the log under the error id
                session.emit("error", {"message": failure_text(exc, f"wiki research of KB {kb.id}")})
                return
            message = getattr(exc, "msg", None) or str(exc)
            session.emit("error", {"message": f"{type(exc).__name__}: {message}"[:500]})

    @staticmethod
    def _citations(report: str, sources: Sources) -> dict[str, Any]:
        by_slug = {p.slug: p for p in sources.pages.values()}
        by_slug.update({slugify(p.title): p for p in sources.pages.values()})
        pages = {by_slug[link.slug].slug: by_slug[link.slug].title for link in wikilinks(report) if link.slug in by_slug}
        labels = {sources.chunk_label(cid): cid for cid in sources.chunks}
        chunk_ids = [labels[m] for m in dict.fromkeys(re.findall(r"\b(c\d+)\b", report)) if m in labels]
        return {
            "pages": [{"slug": s, "title": t} for s, t in pages.items()],
            "chunkIds": chunk_ids,
            "chunks": [
                {
                    "chunkId": str(cid),
                    "rawId": sources.chunks[cid]["rawId"],
                    "rawTitle": sources.chunks[cid]["rawTitle"],
                    "label": sources.chunk_label(cid),
                }
                for cid in chunk_ids
            ],
        }

    @staticmethod
    def _save(session: Session, kb: KnowledgeBase, report: str, chunk_ids: list[int]) -> str:
        """The report as a `synthesis` page (a new slug when the question was asked before)."""
        page = synthesis.save_page(None, kb, f"research {session.question}", f"Research: {session.question[:180]}", report, "research", chunk_ids)
        return page.slug
