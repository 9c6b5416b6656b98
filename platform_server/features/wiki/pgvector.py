"""Chunk and page vectors searched inside PostgreSQL when the server has the pgvector extension.

The vectors stay where they are written, the float32 blobs of wiki_chunk.embedding and wiki_page.embedding;
each table gets a STORED generated column `embedding_vec` of pgvector's type, computed by PostgreSQL from
the blob on every insert and update (platform_f32_vector below decodes the little-endian IEEE floats
exactly). Nothing else writes it, so a write, a delete or a re-embedding cannot leave it behind: there is
no second copy to drift. The column is untyped (`vector`, any dimension): knowledge bases embedded with
models of different dimensions share the table, and a re-embedding moves a KB from one to the other in
place. A typed HNSW/IVFFlat index needs one dimension, so the search is an exact scan of one KB's rows
(filtered by kb_id's index, the model and vector_dims): the same ranking as the in-process matrices, with
no vector memory in any process (docs/benchmarks.md has the figures; README "Growing past one box").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import peewee

from platform_server.db import database
from platform_server.features.wiki import vector_index
from platform_server.lazy import lazy_import
from platform_server.ports import vectors

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

log = logging.getLogger(__name__)

TABLES = ("wiki_chunk", "wiki_page")
COLUMN = "embedding_vec"

# bytea of little-endian float32 -> vector, exactly (every float32 is a float8 product of its mantissa and a
# power of two); NaN/infinity, which pgvector refuses, read as 0. Schema-qualified: pg_dump restores with an
# empty search_path.
DECODE = """
CREATE OR REPLACE FUNCTION {schema}.platform_f32_vector(b bytea) RETURNS {schema}.vector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT array_agg(CASE WHEN x.e = 255 THEN 0::float8 WHEN x.e = 0 THEN x.sg * x.m * 2::float8 ^ -149
                      ELSE x.sg * (8388608 + x.m)::float8 * 2::float8 ^ (x.e - 150) END ORDER BY x.i)::float4[]::{schema}.vector
FROM (SELECT i, CASE WHEN get_byte(b, 4 * i + 3) >= 128 THEN -1 ELSE 1 END AS sg,
             ((get_byte(b, 4 * i + 3) & 127) << 1) | (get_byte(b, 4 * i + 2) >> 7) AS e,
             ((get_byte(b, 4 * i + 2) & 127) << 16) | (get_byte(b, 4 * i + 1) << 8) | get_byte(b, 4 * i) AS m
      FROM generate_series(0, length(b) / 4 - 1) AS i) AS x
$$
"""


def available() -> bool:
    """Whether this database has pgvector: `CREATE EXTENSION IF NOT EXISTS vector` succeeds (or it is there
    already). On SQLite, or when the server lacks the extension or the right to create it: False."""
    store = database.obj
    if not isinstance(store, peewee.PostgresqlDatabase):
        return False
    try:
        with store.atomic():
            store.execute_sql("CREATE EXTENSION IF NOT EXISTS vector")
    except peewee.DatabaseError as exc:
        log.info("pgvector is not available on this PostgreSQL server (%s)", str(exc).strip().splitlines()[0])
        return False
    return True


def install() -> None:
    """The decoding function and each table's generated column (idempotent). Areas start under the migration
    lock (app.start_features), so processes starting together add the column once; adding it computes it for
    the rows already there, as a migration would."""
    store = database.obj
    there = store.execute_sql(
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = ? AND table_name IN (?, ?)",
        (COLUMN, *TABLES),
    ).fetchone()[0]
    if there == len(TABLES):
        return  # made by an earlier start: no ALTER TABLE (and its exclusive lock) while other processes search
    with store.atomic():
        row = store.execute_sql("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'").fetchone()
        schema = row[0]
        store.execute_sql(DECODE.format(schema=schema))
        for table in TABLES:
            # the vector inline in the row (MAIN) and the blob, which searches never read, out of it
            # (EXTERNAL): a row of a 384-dimension chunk is over PostgreSQL's 2 KB TOAST target, and with
            # both left EXTENDED the vector went out of line, a TOAST fetch per row of every scan (1.3 s
            # for 100,000 chunks against 0.1 s inline). A vector too big for a page still goes out of line.
            store.execute_sql(
                f'ALTER TABLE "{table}" ADD COLUMN IF NOT EXISTS {COLUMN} {schema}.vector '
                f"GENERATED ALWAYS AS ({schema}.platform_f32_vector(embedding)) STORED, "
                f"ALTER COLUMN {COLUMN} SET STORAGE MAIN, ALTER COLUMN embedding SET STORAGE EXTERNAL"
            )


def _literal(query: np.ndarray) -> str:
    # repr of each float32 (as a Python float) reads back as the same float32 in pgvector's parser
    return "[" + ",".join(repr(x) for x in query.astype(np.float32).tolist()) + "]"


def _result(rows: list[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([r[0] for r in rows], dtype=np.int64), np.array([r[1] for r in rows], dtype=np.float32)


# one KB's chunks of this model and dimension, with their cosine distance (pgvector's <=>), computed once a row
_CHUNKS = (
    "SELECT c.id, c.embedding_vec <=> ?::vector AS d FROM wiki_chunk c WHERE c.kb_id = ? AND c.embed_model IS ? AND vector_dims(c.embedding_vec) = ?"
)
# one KB's pages with the best of their own cosine and (when cited) their cited chunks' (GREATEST skips NULLs).
# The citations' cosines: each citation's chunk fetched by its primary key (OFFSET 0 keeps the lateral
# subquery a per-citation index lookup). A subquery per page re-read the KB's chunks for each page (0.5 s
# at 3,000 chunks), and a plain join hashed a scan of every chunk of the KB (a few citations a page read all).
_CITED = (
    "cited AS (SELECT pc.page_id, MAX(1 - (c.embedding_vec <=> q.v)) AS s FROM q, wiki_page_citation pc "
    "JOIN LATERAL (SELECT c.embedding_vec FROM wiki_chunk c WHERE c.id = pc.chunk_id AND c.kb_id = ? "
    "AND c.embed_model IS ? AND vector_dims(c.embedding_vec) = ? OFFSET 0) c ON true WHERE pc.kb_id = ?{cited_where} "
    "GROUP BY pc.page_id), "
)
_PAGES = (
    "WITH q AS (SELECT ?::vector AS v), {cited}"
    "scored AS (SELECT p.id, GREATEST(CASE WHEN p.embed_model IS ? AND vector_dims(p.embedding_vec) = ? "
    "THEN 1 - (p.embedding_vec <=> q.v) END, {cited_score}) AS s FROM q, wiki_page p {join}WHERE p.kb_id = ?{where}) "
    "SELECT id, s FROM scored WHERE s IS NOT NULL"
)


class PgVectorIndex:
    """The vector port on pgvector: every score computed by PostgreSQL, nothing kept in this process."""

    name = "pgvector"

    def nearest_chunks(self, kb_id: int, query: np.ndarray, model: int | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        if k <= 0:
            return _result([])
        sql = f"SELECT id, 1 - d FROM ({_CHUNKS}) t ORDER BY d, id LIMIT ?"
        return _result(database.execute_sql(sql, (_literal(query), kb_id, model, len(query), k)).fetchall())

    def chunk_cosines(self, kb_id: int, query: np.ndarray, model: int | None, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        if not ids:
            return _result([])
        sql = f"SELECT id, 1 - d FROM ({_CHUNKS} AND c.id = ANY(?)) t"
        return _result(database.execute_sql(sql, (_literal(query), kb_id, model, len(query), ids)).fetchall())

    def _pages(
        self, kb_id: int, query: np.ndarray, model: int | None, cited: bool, include_archived: bool, ids: list[int] | None
    ) -> tuple[str, list[Any]]:
        """The pages' scores (all of the KB's, or those of `ids`), and the parameters in the order of their places."""
        where = ("" if include_archived else " AND p.archived = 0") + ("" if ids is None else " AND p.id = ANY(?)")
        params: list[Any] = [_literal(query)]
        if cited:
            cited_sql = _CITED.format(cited_where="" if ids is None else " AND pc.page_id = ANY(?)")
            sql = _PAGES.format(cited=cited_sql, cited_score="cited.s", join="LEFT JOIN cited ON cited.page_id = p.id ", where=where)
            params += [kb_id, model, len(query), kb_id] + ([ids] if ids is not None else [])
        else:
            sql = _PAGES.format(cited="", cited_score="NULL", join="", where=where)
        params += [model, len(query), kb_id] + ([ids] if ids is not None else [])
        return sql, params

    def nearest_pages(
        self, kb_id: int, query: np.ndarray, model: int | None, k: int, cited: bool, include_archived: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        if k <= 0:
            return _result([])
        sql, params = self._pages(kb_id, query, model, cited, include_archived, None)
        return _result(database.execute_sql(f"{sql} ORDER BY s DESC, id LIMIT ?", (*params, k)).fetchall())

    def page_cosines(self, kb_id: int, query: np.ndarray, model: int | None, ids: list[int], cited: bool) -> tuple[np.ndarray, np.ndarray]:
        if not ids:
            return _result([])
        sql, params = self._pages(kb_id, query, model, cited, True, ids)
        return _result(database.execute_sql(sql, params).fetchall())

    def kept_bytes(self) -> int:
        return 0


PGVECTOR = PgVectorIndex()


MODES = ("auto", "in-process")  # the setting wiki_vector_search


def choose(mode: str = "auto") -> str:
    """At start: with `auto`, pgvector when the database has it (its columns made ready), else the in-process
    matrices; `in-process` keeps the matrices. Installed behind the vector port and logged once. Returns the name.
    Blocking, and run on the start's own thread like the migrations: the migration lock it runs under is that
    connection's."""
    if mode not in MODES:
        raise ValueError(f"wiki_vector_search must be one of {', '.join(MODES)}, not {mode!r}")
    index: vectors.VectorIndex = vector_index.IN_PROCESS
    if mode == "auto" and available():
        try:
            install()
            index = PGVECTOR
        except peewee.DatabaseError as exc:  # e.g. a role that may use the extension but not alter the tables
            log.warning("pgvector is there but its columns could not be made (%s): vectors stay in-process", str(exc).strip())
    vectors.use(index)
    engine = "PostgreSQL" if isinstance(database.obj, peewee.PostgresqlDatabase) else "SQLite"
    log.info("wiki vector search: %s (%s)", index.name, "exact scan in SQL" if index is PGVECTOR else f"matrices built from {engine}")
    return index.name
