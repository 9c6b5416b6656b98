"""Wiki search through the in-memory per-KB vector matrices: the same results as the blob-by-blob scan,
kept in step with adds, edits and deletes, never reading another KB, and no full read per query."""
from __future__ import annotations

import random
from typing import Any, Iterator

import numpy as np
import pytest

from platform_server import db
from platform_server import pg as pg_store
from platform_server.db import database, run_migrations
from platform_server.features.wiki import search, vector_index
from platform_server.features.wiki.kbs import embedding_model
from platform_server.features.models.models import MIGRATIONS as MODEL_MIGRATIONS
from platform_server.features.wiki.models import MIGRATIONS, Chunk, KnowledgeBase, Page, PageCitation, RawMaterial
from platform_server.ports import changes
from tests.helpers import postgres
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually_sync
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, wait_idle

DIMS = 16
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "lambda", "zeta"]


@pytest.fixture
def store(tmp_path: Any) -> Iterator[None]:
    """The wiki's tables on this run's engine (PLATFORM_TEST_DATABASE=postgres: a fresh PostgreSQL database,
    where the same in-process matrices are built from PostgreSQL's rows: decisions.md, no pgvector)."""
    url = postgres.cluster().fresh_database() if postgres.selected() else ""
    feed = changes.current()
    if url:
        pg_store.open_database(url)
        changes.use(changes.PostgresFeed())
    else:
        db.open_database(str(tmp_path / "wiki.db"))
    try:
        run_migrations(MODEL_MIGRATIONS + MIGRATIONS)  # the wiki's migrations read the default embedding model
        yield
    finally:
        db.close_database()
        changes.use(feed)
        if url:
            postgres.cluster().drop(url)


def _vec(rng: np.random.Generator, dims: int = DIMS) -> bytes:
    return search.pack(rng.standard_normal(dims))


def _kb(seed: int, chunks: int = 120, pages: int = 12) -> int:
    """A KB with chunks (some without a vector, some of another dimension), pages (some archived or
    without a vector) citing chunks, and their FTS rows."""
    rng, words = np.random.default_rng(seed), random.Random(seed)
    kb = KnowledgeBase.create(workspace_id=1, name=f"kb{seed}")
    model = embedding_model(kb)  # the engine records which model made each vector
    raw = RawMaterial.create(kb=kb.id, workspace_id=1, title=f"Raw {seed}", stored_name="r")
    ids = []
    for i in range(chunks):
        text = " ".join(words.choice(WORDS) for _ in range(8))
        blob = None if i % 17 == 0 else _vec(rng, 8) if i % 13 == 0 else _vec(rng)
        c = Chunk.create(kb=kb.id, raw=raw.id, position=i, text=text, embedding=blob, dims=len(blob or b"") // 4, embed_model=model)
        search.fts_put_chunk(c.id, kb.id, text)
        ids.append(c.id)
    for p in range(pages):
        pg = Page.create(kb=kb.id, workspace_id=1, slug=f"p{seed}-{p}", title=words.choice(WORDS), archived=int(p % 5 == 0),
                         markdown=" ".join(words.choice(WORDS) for _ in range(20)), embedding=None if p % 4 == 0 else _vec(rng), dims=DIMS, embed_model=model)
        search.fts_put_page(pg)
        for c in words.sample(ids, 3):
            PageCitation.create(page=pg.id, chunk=c, kb_id=kb.id)
    return kb.id


# ---- the scan as it was (every row read, every blob unpacked): the reference ---------------------


def _scan_pages(kb_ids: list[int], query: str, qv: bytes | None, top_k: int, include_archived: bool) -> list[tuple[str, float, float, float]]:
    keyword = search._keyword("wiki_page_fts", kb_ids, query, 200)
    pages = [p for p in Page.select().where(Page.kb.in_(kb_ids)) if include_archived or not p.archived]
    vector: dict[int, float] = {}
    if qv is not None:
        for p, s in zip(pages, search.cosine_all(qv, [p.embedding for p in pages])):
            vector[p.id] = float(s)
        rows = list(Chunk.select(Chunk.embedding, PageCitation.page.alias("pid")).join(PageCitation, on=(PageCitation.chunk == Chunk.id))
                    .where(PageCitation.kb_id.in_(kb_ids)).dicts())
        for row, s in zip(rows, search.cosine_all(qv, [r["embedding"] for r in rows])):
            if row["pid"] in vector and s > vector[row["pid"]]:
                vector[row["pid"]] = float(s)
    hits = []
    for p in pages:
        kw, v = keyword.get(p.id, 0.0), max(0.0, vector.get(p.id, 0.0))
        if kw > 0 or v > 0:
            hits.append((0.5 * kw + 0.5 * v, p.slug, kw, v))
    hits.sort(key=lambda h: (-h[0], h[1]))
    return [(slug, round(s, 4), round(kw, 4), round(v, 4)) for s, slug, kw, v in hits[:top_k]]


def _scan_chunks(kb_ids: list[int], query: str, qv: bytes | None, top_k: int) -> list[tuple[str, float]]:
    keyword = search._keyword("wiki_chunk_fts", kb_ids, query, 200)
    rows = list(Chunk.select().where(Chunk.kb.in_(kb_ids)).order_by(Chunk.id))
    vec = search.cosine_all(qv, [r.embedding for r in rows]) if qv is not None else [0.0] * len(rows)
    scored = [(0.5 * keyword.get(r.id, 0.0) + 0.5 * max(0.0, float(v)), str(r.id)) for r, v in zip(rows, vec)
              if keyword.get(r.id, 0.0) > 0 or v > 0]
    scored.sort(key=lambda t: -t[0])
    return [(cid, round(s, 4)) for s, cid in scored[:top_k]]


def _pages(kb_ids: list[int], query: str, qv: bytes | None, top_k: int, include_archived: bool) -> list[tuple[str, float, float, float]]:
    return [(h.page.slug, round(h.score, 4), round(h.keyword, 4), round(h.vector, 4))
            for h in search.search_pages(kb_ids, query, qv, top_k, include_archived)]


def _chunks(kb_ids: list[int], query: str, qv: bytes | None, top_k: int) -> list[tuple[str, float]]:
    return [(c["chunkId"], c["score"]) for c in search.search_chunks(kb_ids, query, qv, top_k)]


def _same_ranking(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> None:
    """The same scores in the same order, the same rows above the last score; rows tied at the cut
    (cosines equal to the last float32 bit, which BLAS may round either way) may differ."""
    assert [g[1:] for g in got] == [w[1:] for w in want]
    cut = want[-1][1] if want else 0
    assert sorted(g for g in got if g[1] > cut) == sorted(w for w in want if w[1] > cut)


def test_the_index_ranks_pages_and_chunks_exactly_as_the_full_scan(store: None) -> None:
    kbs = [_kb(1), _kb(2)]
    rng, words = np.random.default_rng(5), random.Random(5)
    for n in range(40):
        query = " ".join(words.sample(WORDS, 2)) if n % 7 else "nothingmatches"
        qv = None if n % 9 == 0 else _vec(rng)
        kb_ids = kbs if n % 2 else kbs[:1]
        for top_k in (1, 5, 30):
            _same_ranking(_pages(kb_ids, query, qv, top_k, n % 3 == 0), _scan_pages(kb_ids, query, qv, top_k, n % 3 == 0))
            _same_ranking(_chunks(kb_ids, query, qv, top_k), _scan_chunks(kb_ids, query, qv, top_k))


def test_a_repeated_search_reads_no_vector_and_runs_no_blob_by_blob_scan(store: None, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = _kb(3)
    qv = _vec(np.random.default_rng(1))
    search.search_pages([kb], "alpha", qv, 5)  # the first search reads the KB's vectors once
    search.search_chunks([kb], "alpha", qv, 5)

    def no_scan(*args: Any) -> Any:
        raise AssertionError("the blob-by-blob scan ran")

    statements: list[str] = []
    real = database.obj.execute_sql
    monkeypatch.setattr(search, "cosine_all", no_scan)
    monkeypatch.setattr(database.obj, "execute_sql", lambda sql, *a, **k: statements.append(sql) or real(sql, *a, **k))
    pages = search.search_pages([kb], "alpha", qv, 5)
    chunks = search.search_chunks([kb], "alpha", qv, 5)
    assert pages and chunks
    # vectors are read only with the few pages returned (the Page rows, by id): no KB-wide read again
    assert not [s for s in statements if "embedding" in s.lower() and '"t1"."id" IN (' not in s], statements


def test_the_index_follows_added_edited_and_deleted_chunks(store: None) -> None:
    kb = _kb(4)
    rng = np.random.default_rng(9)
    qv = _vec(rng)
    first = _chunks([kb], "", qv, 3)
    gone = int(first[0][0])
    search.fts_drop_chunks([gone])
    Chunk.delete().where(Chunk.id == gone).execute()
    after = _chunks([kb], "", qv, 3)
    assert str(gone) not in [c for c, _ in after]
    _same_ranking(after, _scan_chunks([kb], "", qv, 3))
    raw = RawMaterial.get(RawMaterial.kb == kb)
    added = Chunk.create(kb=kb, raw=raw.id, position=999, text="new", embedding=qv, dims=DIMS, embed_model=embedding_model(KnowledgeBase.get_by_id(kb)))
    assert _chunks([kb], "", qv, 1) == [(str(added.id), 0.5)]  # the same vector: cosine 1
    other = _vec(rng)
    Chunk.update(embedding=other).where(Chunk.id == added.id).execute()  # re-embedded in place
    _same_ranking(_chunks([kb], "", qv, 3), _scan_chunks([kb], "", qv, 3))
    assert _chunks([kb], "", other, 1)[0][0] == str(added.id)
    # a page citing it takes its cosine; a deleted citation takes it away again
    pg = Page.select().where((Page.kb == kb) & (Page.archived == 0)).first()
    cite = PageCitation.create(page=pg.id, chunk=added.id, kb_id=kb)
    assert _pages([kb], "", other, 1, False)[0][0] == pg.slug
    cite.delete_instance()
    _same_ranking(_pages([kb], "", other, 5, False), _scan_pages([kb], "", other, 5, False))


@pytest.mark.skipif(not postgres.selected(), reason="another process's write reaches this one through PostgreSQL's NOTIFY")
def test_on_postgres_a_vector_another_process_writes_is_found_through_the_change_feed(store: None) -> None:
    import psycopg2

    kb = _kb(5)
    url = postgres.cluster().url(database.obj.database)
    pg_store.notify_triggers(database.obj, list(vector_index.TABLES))
    listener = pg_store.ChangeListener(url)
    listener.start()
    other = psycopg2.connect(url)  # another server process's connection
    try:
        qv = _vec(np.random.default_rng(11))
        first = _chunks([kb], "", qv, 1)  # the KB's matrix is in memory now
        target = int(_chunks([kb], "", qv, 40)[-1][0])  # a chunk far from the query
        with other, other.cursor() as cursor:
            cursor.execute("UPDATE wiki_chunk SET embedding = %s WHERE id = %s", (psycopg2.Binary(qv), target))
        eventually_sync(lambda: _chunks([kb], "", qv, 1) == [(str(target), 0.5)], what="the re-embedded chunk ranks first")
        assert first != [(str(target), 0.5)]
    finally:
        other.close()
        listener.stop()


def test_a_read_inside_a_transaction_is_not_kept(store: None) -> None:
    kb = _kb(6)
    qv = _vec(np.random.default_rng(2))
    with database.atomic():
        before = _chunks([kb], "", qv, 2)
    assert not vector_index._KEPT and before == _chunks([kb], "", qv, 2) and vector_index._KEPT


def test_only_the_kbs_asked_for_are_read_and_ranked(store: None, monkeypatch: pytest.MonkeyPatch) -> None:
    mine, theirs = _kb(7), _kb(8)
    qv = _vec(np.random.default_rng(3))
    search.search_chunks([mine, theirs], "alpha", qv, 5)  # both KBs' matrices are now in memory
    read: list[int] = []
    real = vector_index.chunk_matrix
    monkeypatch.setattr(vector_index, "chunk_matrix", lambda kb_id, dims, model=None: read.append(kb_id) or real(kb_id, dims, model))
    chunks = search.search_chunks([mine], "alpha beta gamma", qv, 200)
    pages = search.search_pages([mine], "alpha beta gamma", qv, 200, True)
    theirs_chunks = {c.id for c in Chunk.select(Chunk.id).where(Chunk.kb == theirs)}
    assert chunks and not {int(c["chunkId"]) for c in chunks} & theirs_chunks
    assert pages and {h.page.kb_id for h in pages} == {mine} and set(read) == {mine}


# ---- through HTTP: a deleted material's chunks leave the search at once; another workspace's KB is refused


@pytest.fixture
async def processed(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> dict[str, Any]:
    await use_fake_openai(api, llm.url)
    kb_id = await make_kb(api)
    llm.enqueue(Script(text=pages_answer(page("chlorophyll", "Chlorophyll", "# Chlorophyll\n\nThe green pigment.", ["c1"], "entity"))))
    raw = await add_text(api, kb_id, "Plant biology", "Chlorophyll is the green pigment that absorbs light in chloroplasts.")
    await wait_idle(api, kb_id)
    return {"kb": kb_id, "raw": raw["id"]}


async def test_a_deleted_material_is_never_found_again_and_a_foreign_kb_is_never_searched(api: ApiClient, processed: dict) -> None:
    kb = processed["kb"]
    body = {"query": "green pigment", "topK": 5}
    first = (await api.post(f"/api/v1/wiki/kb/{kb}/search-preview", body, token="carol")).data
    assert first["vectorSearch"] is True and [c["rawId"] for c in first["chunks"]] == [processed["raw"]]
    assert vector_index.kept_bytes() > 0  # the KB's vectors stay in memory for the next search
    assert (await api.delete(f"{KB}/{kb}/raw/{processed['raw']}", token="alice")).status == 200
    again = (await api.post(f"/api/v1/wiki/kb/{kb}/search-preview", body, token="carol")).data
    assert again["chunks"] == [] and [h["slug"] for h in again["results"]] == ["chlorophyll"]  # the page stays
    refused = await api.post(f"/api/v1/wiki/kb/{kb}/search-preview", body, token="dave")
    assert refused.status in (403, 404) and "chunks" not in (refused.data or {})


@pytest.mark.config(wiki_vector_cache_mb=0)
async def test_with_no_memory_for_vectors_nothing_is_kept_and_search_still_ranks_by_vector(api: ApiClient, processed: dict) -> None:
    body = {"query": "absorbs light", "topK": 5}
    for _ in range(2):
        r = await api.post(f"/api/v1/wiki/kb/{processed['kb']}/search-preview", body, token="carol")
        assert r.status == 200 and r.data["chunks"][0]["vectorScore"] > 0 and r.data["results"][0]["slug"] == "chlorophyll"
        assert vector_index.kept_bytes() == 0


def test_the_bench_step_fills_a_kb_and_times_its_searches() -> None:
    from scripts.benchmarks import wiki_search

    (result,) = wiki_search.run((300,), dims=8, queries=5)
    assert (result.chunks, result.pages) == (300, 6) and 0 < result.p50_ms <= result.p95_ms
