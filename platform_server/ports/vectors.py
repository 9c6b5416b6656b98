"""The vector index port: nearest chunks and pages of one knowledge base for a query vector.

Two implementations, chosen once at start by the wiki (features/wiki/lifecycle.py) and never known to
the callers (wiki search, the knowledge of a turn): the in-process matrices built from the database and
kept current through the change feed (features/wiki/vector_index.py, the default: SQLite, and PostgreSQL
without the extension), and pgvector, where PostgreSQL computes the cosines (features/wiki/pgvector.py).
Both are exact: the same data gives the same ranking on either (tests/test_pgvector.py).

Every call is scoped to one KB and to one embedding model (`model`, None for none recorded) and compares
only vectors of the query's dimension: a re-embedding's other model never meets this model's query.
Scores are cosines; the arrays are (ids int64, scores float32), best first for `nearest_*`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class VectorIndex(Protocol):
    name: str  # "pgvector" or "in-process": logged at start and reported by GET /api/v1/system/info

    def nearest_chunks(self, kb_id: int, query: np.ndarray, model: int | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The KB's k chunks nearest to `query` (fewer when fewer have a vector of its dimension)."""

    def chunk_cosines(self, kb_id: int, query: np.ndarray, model: int | None, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The cosines of those of `ids` that are the KB's chunks with a vector of the query's dimension."""

    def nearest_pages(
        self, kb_id: int, query: np.ndarray, model: int | None, k: int, cited: bool, include_archived: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """The KB's k best pages: by their own vector, or with `cited` by the best of it and of the chunks they cite."""

    def page_cosines(self, kb_id: int, query: np.ndarray, model: int | None, ids: list[int], cited: bool) -> tuple[np.ndarray, np.ndarray]:
        """The scores (as in nearest_pages) of those of `ids` that are the KB's pages with any score."""

    def kept_bytes(self) -> int:
        """Vector memory this process keeps (0 for pgvector)."""


_current: VectorIndex | None = None


def use(index: VectorIndex) -> None:
    """Install the process's vector index (at start; tests switch it back)."""
    global _current
    _current = index


def offer_default(index: VectorIndex) -> None:
    """The in-process index offers itself when its module loads: used until a start chooses."""
    if _current is None:
        use(index)


def current() -> VectorIndex:
    if _current is None:
        raise RuntimeError("no vector index: features/wiki/vector_index.py offers the default when it loads")
    return _current


def name() -> str:
    """The index in use, for the system info: before any choice, the in-process default."""
    return _current.name if _current is not None else "in-process"
