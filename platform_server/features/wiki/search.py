"""Vectors (normalised float32 blobs, numpy cosine), FTS5 upkeep and the hybrid page search."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import peewee

from platform_server.db import database
from platform_server.features.wiki import vector_index  # noqa: F401  (offers the in-process index to the port)
from platform_server.features.wiki.kbs import embedding_model
from platform_server.features.wiki.models import Chunk, KnowledgeBase, Page, RawMaterial
from platform_server.features.wiki.text import snippet
from platform_server.lazy import lazy_import
from platform_server.ports import vectors
from platform_server.serialize import GIVEN, Fields, ident

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

KEYWORD_WEIGHT = 0.5
VECTOR_WEIGHT = 0.5


def pack(vector: Sequence[float]) -> bytes:
    """A normalised float32 blob."""
    arr = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(arr))
    return (arr / norm if norm > 0 else arr).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def cosine_all(query: bytes, blobs: Sequence[bytes | None]) -> np.ndarray:
    """Cosine of the (normalised) query against each blob of the same dimension (others score 0)."""
    q = unpack(query)
    out = np.zeros(len(blobs), dtype=np.float32)
    same = [i for i, b in enumerate(blobs) if b is not None and len(b) == len(query)]
    if same:
        matrix = np.vstack([unpack(b) for b in (blobs[i] for i in same) if b is not None])
        out[same] = matrix @ q
    return out


# ---- FTS5 upkeep (rowid = the row's id) -------------------------------------------------------


def fts_put_chunk(chunk_id: int, kb_id: int, text: str) -> None:
    database.execute_sql("INSERT INTO wiki_chunk_fts(rowid, text, kb_id) VALUES (?, ?, ?)", (chunk_id, text, kb_id))


def fts_drop_chunks(chunk_ids: list[int]) -> None:
    for i in range(0, len(chunk_ids), 500):
        part = chunk_ids[i : i + 500]
        database.execute_sql(f"DELETE FROM wiki_chunk_fts WHERE rowid IN ({','.join('?' * len(part))})", part)


def fts_put_page(page: Page) -> None:
    database.execute_sql("DELETE FROM wiki_page_fts WHERE rowid = ?", (page.id,))
    database.execute_sql("INSERT INTO wiki_page_fts(rowid, title, body, kb_id) VALUES (?, ?, ?, ?)", (page.id, page.title, page.markdown, page.kb_id))


def fts_drop_pages(page_ids: list[int]) -> None:
    for i in range(0, len(page_ids), 500):
        part = page_ids[i : i + 500]
        database.execute_sql(f"DELETE FROM wiki_page_fts WHERE rowid IN ({','.join('?' * len(part))})", part)


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any word of the text (each quoted, so no syntax gets through)."""
    words = [w for w in re.findall(r"\w+", text.lower()) if len(w) > 1][:32]
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words)) or None


def keyword_sql(table: str, kb_count: int, match: str, columns: str = "rowid, rank") -> tuple[str, str]:
    """The statement (and its match parameter) finding rows of `table` matching `match` (an `fts_query`)
    in `kb_count` KBs, best first, `rank` lower for better, LIMIT a parameter. SQLite: FTS5's MATCH and
    bm25 rank; PostgreSQL: the table's tsvector against the same words OR-ed, minus ts_rank as rank."""
    marks = ",".join("?" * kb_count)
    if isinstance(database.obj, peewee.PostgresqlDatabase):
        words = " | ".join(re.findall(r"\w+", match))  # the quoted words of fts_query: no tsquery syntax left
        sql = (
            f"SELECT {columns} FROM (SELECT rowid, -ts_rank(tsv, q) AS rank FROM {table}, to_tsquery('simple', ?) q"
            f" WHERE tsv @@ q AND kb_id IN ({marks})) hits ORDER BY rank LIMIT ?"
        )
        return sql, words
    # `rank` is bm25() (FTS5's default ranking) computed once per row: about 3x faster than ordering by bm25()
    return f"SELECT {columns} FROM {table} WHERE {table} MATCH ? AND kb_id IN ({marks}) ORDER BY rank LIMIT ?", match


def _keyword(table: str, kb_ids: list[int], query: str, limit: int) -> dict[int, float]:
    """rowid -> keyword score in (0, 1] (best hit 1) for rows of the given KBs."""
    match = fts_query(query)
    if match is None or not kb_ids:
        return {}
    sql, param = keyword_sql(table, len(kb_ids), match)
    rows = database.execute_sql(sql, (param, *kb_ids, limit)).fetchall()
    if not rows:
        return {}
    best = max(-float(r[1]) for r in rows) or 1.0
    return {int(r[0]): max(1e-6, -float(r[1]) / best) for r in rows}


@dataclass
class Hit:
    page: Page
    score: float
    keyword: float
    vector: float


def _threshold(scores: np.ndarray, top_k: int) -> float:
    """The top_k-th best score (ties at it are all kept, then ordered as the scan ordered them)."""
    if len(scores) <= top_k:
        return float(scores.min()) if len(scores) else 0.0
    return float(np.partition(scores, len(scores) - top_k)[len(scores) - top_k])


def vector_models(kb_ids: list[int], model_id: int | None) -> dict[int, int | None]:
    """KB id -> the embedding model whose vectors a query vector may meet there: the query's model when
    known, else each KB's current one (vectors of another model, e.g. during a re-embedding, score 0)."""
    if model_id is not None:
        return {kb_id: model_id for kb_id in kb_ids}
    return {kb.id: embedding_model(kb) for kb in KnowledgeBase.select().where(KnowledgeBase.id.in_(kb_ids))}


def search_pages(
    kb_ids: list[int], query: str, query_vec: bytes | None, top_k: int, include_archived: bool = False, model_id: int | None = None
) -> list[Hit]:
    """Hybrid page ranking: normalised BM25 over title+body and the best cosine of the page or its cited chunks.

    Vector scores come from the vector port (in-process matrices or pgvector): a page outside its KB's top_k
    by vector and without a keyword hit cannot reach the top_k, so only those and the keyword hits are scored;
    only the best pages are read as rows. `model_id`: the embedding model of `query_vec` (None: each KB's current model)."""
    if not kb_ids or top_k <= 0:
        return []
    keyword = _keyword("wiki_page_fts", kb_ids, query, 200)
    q = unpack(query_vec).copy() if query_vec is not None else None  # aligned, as the matrices
    models = vector_models(kb_ids, model_id) if q is not None else {}
    index = vectors.current()
    # the keyword hits' KBs and archived flags (at most 200 rows), the vector candidates per KB
    kw_pages = Page.select(Page.id, Page.kb, Page.archived).where(Page.id.in_(list(keyword) or [0]))
    kw_by_kb: dict[int, list[int]] = {}
    for p in kw_pages:
        if include_archived or not p.archived:
            kw_by_kb.setdefault(p.kb_id, []).append(p.id)
    found: dict[int, float] = {}
    for kb_id in dict.fromkeys(kb_ids):
        if q is not None:
            for got in (
                index.nearest_pages(kb_id, q, models.get(kb_id), top_k, True, include_archived),
                index.page_cosines(kb_id, q, models.get(kb_id), kw_by_kb.get(kb_id, []), True),
            ):
                found.update(zip(got[0].tolist(), got[1].tolist()))
        found.update((i, found.get(i, 0.0)) for i in kw_by_kb.get(kb_id, []))
    ranked = []
    for page_id, v in found.items():
        kw, vec = keyword.get(page_id, 0.0), max(0.0, v)
        if kw > 0 or vec > 0:
            ranked.append((KEYWORD_WEIGHT * kw + VECTOR_WEIGHT * vec, kw, vec, page_id))
    if not ranked:
        return []
    scores = np.array([r[0] for r in ranked], dtype=np.float64)
    cut = _threshold(scores, top_k)
    best = [r for r in ranked if r[0] >= cut]
    pages = {p.id: p for p in Page.select().where(Page.id.in_([r[3] for r in best]))}
    hits = [Hit(pages[i], s, k, v) for s, k, v, i in best if i in pages]
    hits.sort(key=lambda h: (-h.score, h.page.slug))
    return hits[:top_k]


# A chunk row with its scores and its raw material's title, which the search passes.
CHUNK_HIT_FIELDS = Fields(
    chunkId=ident("id"),
    rawId=ident("raw_id"),
    rawTitle=GIVEN,
    position="position",
    snippet=GIVEN,
    score=GIVEN,
    keywordScore=GIVEN,
    vectorScore=GIVEN,
)


def search_chunks(kb_ids: list[int], query: str, query_vec: bytes | None, top_k: int, model_id: int | None = None) -> list[dict[str, Any]]:
    """Hybrid ranking of raw chunks, for the preview (vector scores from the vector port;
    `model_id` as in search_pages)."""
    if not kb_ids or top_k <= 0:
        return []
    keyword = _keyword("wiki_chunk_fts", kb_ids, query, 200)
    q = unpack(query_vec).copy() if query_vec is not None else None  # aligned, as the matrices
    found: dict[int, float] = {}  # chunk id -> cosine, for the vector candidates and every keyword hit
    models = vector_models(kb_ids, model_id) if q is not None else {}
    index = vectors.current()
    for kb_id in dict.fromkeys(kb_ids):
        if q is None:
            continue
        # a chunk outside the top_k by cosine and without a keyword hit cannot reach the top_k
        for ids, cos in (
            index.nearest_chunks(kb_id, q, models.get(kb_id), top_k),
            index.chunk_cosines(kb_id, q, models.get(kb_id), list(keyword)),
        ):
            found.update(zip(ids.tolist(), cos.tolist()))
    # both maps hold only chunks of these KBs: rank on the scores, then read just the top_k rows
    ranked = []
    for cid in sorted(set(found) | set(keyword)):
        kw, v = keyword.get(cid, 0.0), found.get(cid, 0.0)
        if kw > 0 or v > 0:
            ranked.append((KEYWORD_WEIGHT * kw + VECTOR_WEIGHT * max(0.0, v), kw, v, cid))
    ranked.sort(key=lambda t: -t[0])
    best = [t[3] for t in ranked[:top_k]]
    rows = {r.id: r for r in Chunk.select(Chunk.id, Chunk.raw, Chunk.text, Chunk.position).where(Chunk.id.in_(best))}
    scored = [(s, kw, v, rows[cid]) for s, kw, v, cid in ranked[:top_k] if cid in rows]
    titles = {
        r.id: r.title
        for r in RawMaterial.select(RawMaterial.id, RawMaterial.title).where(RawMaterial.id.in_([t[3].raw_id for t in scored[:top_k]] or [0]))
    }
    return [
        CHUNK_HIT_FIELDS(
            row,
            rawTitle=titles.get(row.raw_id, ""),
            snippet=snippet(row.text, query),
            score=round(s, 4),
            keywordScore=round(kw, 4),
            vectorScore=round(v, 4),
        )
        for s, kw, v, row in scored[:top_k]
    ]


HIT_FIELDS = Fields(
    pageId=lambda h: str(h.page.id),
    kbId=lambda h: str(h.page.kb_id),
    slug=lambda h: h.page.slug,
    title=lambda h: h.page.title,
    pageType=lambda h: h.page.page_type,
    archived=lambda h: h.page.archived,
    snippet=GIVEN,
    score=lambda h: round(h.score, 4),
    keywordScore=lambda h: round(h.keyword, 4),
    vectorScore=lambda h: round(h.vector, 4),
)


def hit_dict(hit: Hit, query: str) -> dict[str, Any]:
    return HIT_FIELDS(hit, snippet=snippet(hit.page.markdown, query))
