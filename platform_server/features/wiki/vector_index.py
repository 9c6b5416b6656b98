"""Per-KB vector matrices kept in memory, so a search is one matrix product instead of reading every blob.

Each KB's chunk vectors (and its pages' vectors with their citations) are read once into one float32
matrix per embedding dimension and kept until a row of wiki_chunk, wiki_page or
wiki_page_citation changes (the versions of the change feed, `ports.changes`, which SQLite's hooks keep:
no query per search). The scan stays exact: scores are the same cosines the blob-by-blob scan gave,
so results do not change, only their cost (a 100,000 x 384 product is a few milliseconds; reading
and unpacking 100,000 blobs per query was most of a second). An approximate index (sqlite-vec's vec0
is itself a brute-force scan in SQLite; HNSW libraries trade exactness) was not needed at this size.

`IN_PROCESS` is this index behind the vector port (ports/vectors.py); on PostgreSQL with pgvector the
port is features/wiki/pgvector.py instead and no matrix is built.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from platform_server.db import database
from platform_server.lazy import lazy_import
from platform_server.ports import changes, vectors

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

TABLES = ("wiki_chunk", "wiki_page", "wiki_page_citation")
for _table in TABLES:
    changes.subscribe(_table)

# Memory for the kept matrices, all KBs together (config `wiki_vector_cache_mb`, set at start): the least
# recently searched are dropped first; one larger than the whole budget is used for its search, not kept.
BUDGET_BYTES = 256 * 1024 * 1024


def configure(cache_mb: int) -> None:
    global BUDGET_BYTES
    BUDGET_BYTES = max(0, cache_mb) * 1024 * 1024
    clear()


@dataclass(frozen=True)
class ChunkMatrix:
    ids: np.ndarray  # int64, ascending: the chunks of the KB with a vector of this dimension
    vectors: np.ndarray  # (len(ids), dims) float32, normalised


@dataclass(frozen=True)
class PageMatrix:
    ids: np.ndarray  # int64, ascending: every page of the KB
    archived: np.ndarray  # bool per page
    vectors: np.ndarray  # (len(ids), dims) float32; zeros where the page has no vector of this dimension
    cite_page: np.ndarray  # positions in `ids` ...
    cite_chunk: np.ndarray  # ... and in the KB's ChunkMatrix of the same dimension, one pair per citation


_LOCK = threading.Lock()
_KEPT: OrderedDict[tuple[str, int, int], ChunkMatrix | PageMatrix] = OrderedDict()
_SEEN: list[tuple[int, ...]] = [()]


def _stamp() -> tuple[int, ...]:
    return changes.versions(TABLES)


def _cached(key: tuple[Any, ...], build: Any) -> Any:
    now = _stamp()
    with _LOCK:
        if now != _SEEN[0]:
            _KEPT.clear()
            _SEEN[0] = now
        kept = _KEPT.get(key)
        if kept is not None:
            _KEPT.move_to_end(key)
            return kept
    settled = changes.settled()  # a transaction's snapshot may predate a commit: not kept
    value = build()
    size = _nbytes(value)
    with _LOCK:
        if settled and _stamp() == now == _SEEN[0] and size <= BUDGET_BYTES:
            _KEPT[key] = value
            while sum(_nbytes(v) for v in _KEPT.values()) > BUDGET_BYTES:
                _KEPT.popitem(last=False)
    return value


def _nbytes(value: ChunkMatrix | PageMatrix) -> int:
    return sum(int(getattr(value, f).nbytes) for f in value.__dataclass_fields__)


def kept_bytes() -> int:
    with _LOCK:
        return sum(_nbytes(v) for v in _KEPT.values())


def clear() -> None:
    with _LOCK:
        _KEPT.clear()
        _RECENT.clear()


def _matrix(blobs: list[bytes], dims: int) -> np.ndarray:
    if not blobs:
        return np.zeros((0, dims), dtype=np.float32)
    # a copy numpy allocates (aligned): a product over the unaligned buffer of the joined bytes is several
    # times slower in OpenBLAS's threaded kernel
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dims).copy()


def chunk_matrix(kb_id: int, dims: int, model: int | None = None) -> ChunkMatrix:
    """The KB's chunk vectors of `dims` dimensions made by the embedding model `model` (another model's
    vectors, e.g. during a re-embedding, are never compared with this model's query)."""

    def build() -> ChunkMatrix:
        rows = database.execute_sql(
            "SELECT id, embedding FROM wiki_chunk WHERE kb_id = ? AND embed_model IS ? AND length(embedding) = ? ORDER BY id",
            (kb_id, model, dims * 4),
        ).fetchall()
        return ChunkMatrix(np.array([r[0] for r in rows], dtype=np.int64), _matrix([r[1] for r in rows], dims))

    return _cached(("chunk", kb_id, dims, model), build)


def page_matrix(kb_id: int, dims: int, model: int | None = None) -> PageMatrix:
    """Every page of the KB (ids, archived flags) with its vector when `model` made it in `dims` dimensions."""

    def build() -> PageMatrix:
        rows = database.execute_sql("SELECT id, archived, embedding, embed_model FROM wiki_page WHERE kb_id = ? ORDER BY id", (kb_id,)).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        vectors = np.zeros((len(rows), dims), dtype=np.float32)
        for i, r in enumerate(rows):
            if r[2] is not None and len(r[2]) == dims * 4 and r[3] == model:
                vectors[i] = np.frombuffer(r[2], dtype=np.float32)
        if dims == 0:  # only the ids and archived flags are wanted (a search without a query vector)
            return PageMatrix(ids, np.array([bool(r[1]) for r in rows], dtype=bool), vectors, ids[:0], ids[:0])
        cites = database.execute_sql("SELECT page_id, chunk_id FROM wiki_page_citation WHERE kb_id = ?", (kb_id,)).fetchall()
        chunks = chunk_matrix(kb_id, dims, model).ids
        page_ids = np.array([c[0] for c in cites], dtype=np.int64)
        chunk_ids = np.array([c[1] for c in cites], dtype=np.int64)
        page_pos, page_ok = positions(ids, page_ids)
        chunk_pos, chunk_ok = positions(chunks, chunk_ids)
        ok = page_ok & chunk_ok  # a cited chunk without a vector of this dimension scores nothing
        archived = np.array([bool(r[1]) for r in rows], dtype=bool)
        return PageMatrix(ids, archived, vectors, page_pos[ok], chunk_pos[ok])

    return _cached(("page", kb_id, dims, model if dims else None), build)


def positions(ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of `wanted` in the ascending `ids`, and which of them are there at all."""
    if len(ids) == 0:
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    pos = np.searchsorted(ids, wanted)
    pos = np.minimum(pos, len(ids) - 1)
    return pos, ids[pos] == wanted


_RECENT: OrderedDict[tuple[int, bytes, int | None, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = OrderedDict()
RECENT_QUERIES = 8  # a search ranks pages, then chunks, with the same query: the product is made once


def chunk_scores(kb_id: int, query: np.ndarray, model: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids, cosine per chunk) of the KB's chunks with a vector of the query's dimension and model."""
    key = (kb_id, query.tobytes(), model, _stamp())
    with _LOCK:
        recent = _RECENT.get(key)
    if recent is not None:
        return recent
    settled = changes.settled()
    m = chunk_matrix(kb_id, len(query), model)
    scores = (m.ids, m.vectors @ query)
    with _LOCK:
        if settled and _stamp() == key[3]:
            _RECENT[key] = scores
        while len(_RECENT) > RECENT_QUERIES:
            _RECENT.popitem(last=False)
    return scores


def page_scores(kb_id: int, query: np.ndarray, model: int | None = None) -> tuple[PageMatrix, np.ndarray]:
    """Every page of the KB and its vector score: the best cosine of the page or of a chunk it cites."""
    pm = page_matrix(kb_id, len(query), model)
    scores = pm.vectors @ query
    if len(pm.cite_page):
        _, per_chunk = chunk_scores(kb_id, query, model)
        np.maximum.at(scores, pm.cite_page, per_chunk[pm.cite_chunk])
    return pm, scores


def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (ids, scores), best first; ties by ascending id, as pgvector's ORDER BY gives them."""
    if k <= 0 or not len(ids):
        return ids[:0], scores[:0]
    if len(ids) > k:
        cut = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= cut  # every tie at the cut, then the order below picks by id
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order], scores[order]


def _pick(ids: np.ndarray, scores: np.ndarray, wanted: list[int]) -> tuple[np.ndarray, np.ndarray]:
    pos, ok = positions(ids, np.array(wanted, dtype=np.int64))
    return ids[pos[ok]], scores[pos[ok]]


class InProcessIndex:
    """The vector port over the kept matrices (SQLite, and PostgreSQL without pgvector)."""

    name = "in-process"

    def nearest_chunks(self, kb_id: int, query: np.ndarray, model: int | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        ids, scores = chunk_scores(kb_id, query, model)
        return _top(ids, scores, k)

    def chunk_cosines(self, kb_id: int, query: np.ndarray, model: int | None, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        return _pick(*chunk_scores(kb_id, query, model), ids)

    def _pages(self, kb_id: int, query: np.ndarray, model: int | None, cited: bool, include_archived: bool) -> tuple[np.ndarray, np.ndarray]:
        if cited:
            pm, scores = page_scores(kb_id, query, model)
            has = (np.abs(pm.vectors).sum(axis=1) > 0) | np.isin(np.arange(len(pm.ids)), pm.cite_page)
        else:
            pm = page_matrix(kb_id, len(query), model)
            scores = pm.vectors @ query
            has = np.abs(pm.vectors).sum(axis=1) > 0  # a page of another model or dimension has zeros there
        keep = has if include_archived else has & ~pm.archived
        return pm.ids[keep], scores[keep]

    def nearest_pages(
        self, kb_id: int, query: np.ndarray, model: int | None, k: int, cited: bool, include_archived: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        return _top(*self._pages(kb_id, query, model, cited, include_archived), k)

    def page_cosines(self, kb_id: int, query: np.ndarray, model: int | None, ids: list[int], cited: bool) -> tuple[np.ndarray, np.ndarray]:
        return _pick(*self._pages(kb_id, query, model, cited, True), ids)

    def kept_bytes(self) -> int:
        return kept_bytes()


IN_PROCESS = InProcessIndex()
vectors.offer_default(IN_PROCESS)
