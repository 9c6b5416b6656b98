"""Wiki vector search on both paths of the vector port: pgvector (a real PostgreSQL 16 with the extension, from
the pgserver wheel) and the in-process matrices. The same data gives the same ranking on both (and the full scan's);
on pgvector the vectors are PostgreSQL's generated column, in step with every write, and no process keeps a matrix."""
from __future__ import annotations

import random
from typing import Any, Iterator

import numpy as np
import pytest

from platform_server import db
from platform_server import pg as pg_store
from platform_server.db import database, run_migrations
from platform_server.features.models.models import MIGRATIONS as MODEL_MIGRATIONS
from platform_server.features.wiki import pgvector, retrieval, search, vector_index
from platform_server.features.wiki.kbs import embedding_model
from platform_server.features.wiki.models import MIGRATIONS, Chunk, KnowledgeBase, Page, RawMaterial
from platform_server.ports import changes, vectors
from tests.helpers import pgvector_server
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import create_personas, start_server
from tests.helpers.wiki import add_text, make_kb, page, pages_answer, wait_idle
from tests.test_wiki_vector_index import DIMS, WORDS, _chunks, _kb, _pages, _same_ranking, _scan_chunks, _scan_pages, _vec

SKIP = pgvector_server.skip_reason()
needs_pgvector = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


@pytest.fixture(params=["in-process", "pgvector"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    """The wiki's tables on SQLite with the in-process index, or on a PostgreSQL with pgvector and its index."""
    if request.param == "pgvector" and SKIP is not None:
        pytest.skip(SKIP)
    url = pgvector_server.fresh_url() if request.param == "pgvector" else ""
    feed = changes.current()
    if url:
        pg_store.open_database(url)
        changes.use(changes.PostgresFeed())
    else:
        db.open_database(str(tmp_path / "wiki.db"))
    try:
        run_migrations(MODEL_MIGRATIONS + MIGRATIONS)
        assert pgvector.choose() == request.param  # on SQLite nothing is tried; on PostgreSQL the extension is there
        vector_index.clear()
        yield request.param
    finally:
        vectors.use(vector_index.IN_PROCESS)
        db.close_database()
        changes.use(feed)
        if url:
            pgvector_server.drop(url)


def _both(call: Any) -> tuple[Any, Any]:
    """The same call through the chosen index and through the in-process matrices (on the same rows)."""
    chosen = vectors.current()
    first = call()
    vectors.use(vector_index.IN_PROCESS)
    try:
        return first, call()
    finally:
        vectors.use(chosen)


def test_both_paths_rank_as_the_full_scan_and_give_the_same_top_results(store: str) -> None:
    kbs = [_kb(1), _kb(2)]
    rng, words = np.random.default_rng(5), random.Random(5)
    for n in range(24):
        query = " ".join(words.sample(WORDS, 2)) if n % 7 else "nothingmatches"
        qv = None if n % 9 == 0 else _vec(rng)
        kb_ids = kbs if n % 2 else kbs[:1]
        for top_k in (1, 5, 30):
            pages, pages_in_process = _both(lambda: _pages(kb_ids, query, qv, top_k, n % 3 == 0))
            _same_ranking(pages, _scan_pages(kb_ids, query, qv, top_k, n % 3 == 0))
            _same_ranking(pages, pages_in_process)
            chunks, chunks_in_process = _both(lambda: _chunks(kb_ids, query, qv, top_k))
            _same_ranking(chunks, _scan_chunks(kb_ids, query, qv, top_k))
            _same_ranking(chunks, chunks_in_process)
    # a turn's knowledge: the nearest pages and chunks by vector alone (queries near stored vectors: above MIN_SIMILARITY)
    model = embedding_model(KnowledgeBase.get_by_id(kbs[0]))
    near = [bytes(r.embedding) for r in Chunk.select().where((Chunk.kb == kbs[0]) & (Chunk.dims == DIMS)).limit(3)]
    near += [bytes(r.embedding) for r in Page.select().where((Page.kb == kbs[1]) & Page.embedding.is_null(False)).limit(3)]
    for qv in near:
        query_vectors = {kb: retrieval.QueryVector(qv, model) for kb in kbs}
        for kind in ("page", "material"):
            got, in_process = _both(lambda: retrieval._nearest(kind, query_vectors))
            assert got == in_process
            assert got or kind == "page"  # a chunk's own vector is among the chunks at cosine 1
    if store == "pgvector":
        assert vector_index.kept_bytes() == 0 or vectors.current() is not vector_index.IN_PROCESS
        vector_index.clear()
        _pages(kbs, "alpha", _vec(rng), 5, False), _chunks(kbs, "alpha", _vec(rng), 5)
        assert vector_index.kept_bytes() == 0 and not vector_index._KEPT  # pgvector: no matrix in this process


@needs_pgvector
@pytest.mark.parametrize("store", ["pgvector"], indirect=True)
def test_pgvector_follows_writes_deletes_and_re_embeddings_in_sql(store: str) -> None:
    kb = _kb(4)
    rng = np.random.default_rng(9)
    qv = _vec(rng)
    # the generated column holds exactly the blob's floats
    sql = "SELECT embedding, embedding_vec::text FROM wiki_chunk WHERE kb_id = ? AND dims = ? LIMIT 1"
    blob, text = database.execute_sql(sql, (kb, DIMS)).fetchone()
    assert np.array_equal(np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32), np.frombuffer(bytes(blob), dtype=np.float32))
    gone = int(_chunks([kb], "", qv, 1)[0][0])
    search.fts_drop_chunks([gone])
    Chunk.delete().where(Chunk.id == gone).execute()
    assert str(gone) not in [c for c, _ in _chunks([kb], "", qv, 5)]
    _same_ranking(_chunks([kb], "", qv, 3), _scan_chunks([kb], "", qv, 3))
    model = embedding_model(KnowledgeBase.get_by_id(kb))
    raw = RawMaterial.get(RawMaterial.kb == kb)
    added = Chunk.create(kb=kb, raw=raw.id, position=999, text="new", embedding=qv, dims=DIMS, embed_model=model)
    assert _chunks([kb], "", qv, 1) == [(str(added.id), 0.5)]  # the same vector: cosine 1
    other = _vec(rng)
    Chunk.update(embedding=other).where(Chunk.id == added.id).execute()  # re-embedded in place
    assert _chunks([kb], "", other, 1)[0][0] == str(added.id) and _chunks([kb], "", qv, 1)[0][0] != str(added.id)
    # re-embedded by another model of another dimension: the old model's query no longer meets it, the new one's does
    wide = _vec(rng, 32)
    Chunk.update(embedding=wide, dims=32, embed_model=None).where(Chunk.id == added.id).execute()
    assert str(added.id) not in [c for c, _ in _chunks([kb], "", other, 200)]
    ids, cos = vectors.current().nearest_chunks(kb, search.unpack(wide).copy(), None, 1)
    assert ids.tolist() == [added.id] and abs(float(cos[0]) - 1.0) < 1e-5
    # a page's own vector follows its page too
    pg = Page.select().where((Page.kb == kb) & (Page.archived == 0)).first()
    Page.update(embedding=other).where(Page.id == pg.id).execute()
    ids, cos = vectors.current().nearest_pages(kb, search.unpack(other).copy(), model, 1, False, False)
    assert ids.tolist() == [pg.id] and abs(float(cos[0]) - 1.0) < 1e-5


@needs_pgvector
async def test_a_server_on_postgresql_with_pgvector_reports_it_and_searches_there(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    url = pgvector_server.fresh_url()
    server = await start_server(str(tmp_path / "data"), database_url=url)
    try:
        api: ApiClient = server.client
        await create_personas(api)
        info = await api.get("/api/v1/system/info", token="alice")
        assert info.status == 200 and info.data["vectorSearch"] == "pgvector", info.body
        await use_fake_openai(api, llm.url)
        kb_id = await make_kb(api)
        llm.enqueue(Script(text=pages_answer(page("chlorophyll", "Chlorophyll", "# Chlorophyll\n\nThe green pigment.", ["c1"], "entity"))))
        raw = await add_text(api, kb_id, "Plant biology", "Chlorophyll is the green pigment that absorbs light in chloroplasts.")
        await wait_idle(api, kb_id)
        found = await api.post(f"/api/v1/wiki/kb/{kb_id}/search-preview", {"query": "absorbs light", "topK": 5}, token="carol")
        assert found.status == 200 and found.data["vectorSearch"] is True, found.body
        assert [c["rawId"] for c in found.data["chunks"]] == [raw["id"]] and found.data["chunks"][0]["vectorScore"] > 0
        assert found.data["results"][0]["slug"] == "chlorophyll" and vector_index.kept_bytes() == 0
        # a restart on the same database finds its columns made and alters nothing; the search is the same
        await server.stop()
        server = await start_server(str(tmp_path / "data"), database_url=url)
        server.client.tokens.update(api.tokens)
        info = await server.client.get("/api/v1/system/info", token="alice")
        assert info.status == 200 and info.data["vectorSearch"] == "pgvector", info.body
        again = await server.client.post(f"/api/v1/wiki/kb/{kb_id}/search-preview", {"query": "absorbs light", "topK": 5}, token="carol")
        assert again.status == 200 and again.data["chunks"] == found.data["chunks"], again.body
        # wiki_vector_search = "in-process": the same database searched from the matrices, with the same answer
        await server.stop()
        server = await start_server(str(tmp_path / "data"), database_url=url, wiki_vector_search="in-process")
        server.client.tokens.update(api.tokens)
        info = await server.client.get("/api/v1/system/info", token="alice")
        assert info.status == 200 and info.data["vectorSearch"] == "in-process", info.body
        local = await server.client.post(f"/api/v1/wiki/kb/{kb_id}/search-preview", {"query": "absorbs light", "topK": 5}, token="carol")
        assert local.status == 200 and [c["rawId"] for c in local.data["chunks"]] == [raw["id"]], local.body
        assert vector_index.kept_bytes() > 0
    finally:
        await server.stop()
        pgvector_server.drop(url)
    assert vectors.current() is vector_index.IN_PROCESS  # a stopped server leaves the default for the next
