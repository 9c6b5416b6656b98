"""Wiki retrieval latency: the passages of one agent turn (FTS5 + vectors fused by rank) over a KB of N chunks.

    .venv/bin/python -m scripts.benchmarks.wiki_search --chunks 10000 100000 [--dims 384] [--queries 40]

Builds a throwaway data dir per size (chunks of generated prose with random unit vectors, one page per
20 chunks), then times `retrieval.passages` (the blocking part of a turn's retrieval; the query's
embedding call is the provider's) and prints the first query's time (it loads the KB's vectors into
memory: once after every change of the table), then p50/p95 in milliseconds."""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

# Prose-like text: a few very common words and a long tail (Zipf-like), so keyword hits are selective.
COMMON = "the a of and to is in it for on with as how what when".split()
TAIL = [f"w{i}" for i in range(20_000)]


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(COMMON) if rng.random() < 0.4 else TAIL[min(int(rng.paretovariate(0.8)) - 1, len(TAIL) - 1)] for _ in range(n))


def build(data_dir: str, chunks: int, dims: int) -> tuple[object, int]:
    import numpy as np

    from platform_server.app import make_app
    from platform_server.config import Config
    from platform_server.db import database
    from platform_server.features.wiki.models import KnowledgeBase

    make_app(Config(data_dir=data_dir))
    kb = KnowledgeBase.create(workspace_id=1, name="Bench", config={})
    rng = random.Random(7)
    vectors = np.random.default_rng(7).standard_normal((chunks, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with database.atomic():
        database.execute_sql(
            "INSERT INTO wiki_raw (kb_id, workspace_id, title, source_type, file_name, stored_name, content_type, size_bytes,"
            " content_hash, text, status, queued, chunk_count, removed, create_time, update_time)"
            " VALUES (?, 1, 'notes', 'text', '', 'x', 'text/plain', 0, '', '', 'completed', 0, ?, 0, '2026-01-01', '2026-01-01')",
            (kb.id, chunks),
        )
        raw_id = database.execute_sql("SELECT last_insert_rowid()").fetchone()[0]
        for i in range(chunks):
            text = sentence(rng, 180)
            cur = database.execute_sql(
                "INSERT INTO wiki_chunk (kb_id, raw_id, position, text, embedding, dims, create_time) VALUES (?, ?, ?, ?, ?, ?, '2026-01-01')",
                (kb.id, raw_id, i, text, vectors[i].tobytes(), dims),
            )
            chunk_id = database.execute_sql("SELECT last_insert_rowid()").fetchone()[0]
            database.execute_sql("INSERT INTO wiki_chunk_fts(rowid, text, kb_id) VALUES (?, ?, ?)", (chunk_id, text, kb.id))
            if i % 20 == 0:
                database.execute_sql(
                    "INSERT INTO wiki_page (kb_id, workspace_id, slug, title, page_type, markdown, archived, origin, version, embedding, dims,"
                    " create_time, update_time) VALUES (?, 1, ?, ?, 'concept', ?, 0, 'generated', 1, ?, ?, '2026-01-01', '2026-01-01')",
                    (kb.id, f"p{i}", f"Page {i}", text, vectors[i].tobytes(), dims),
                )
                page_id = database.execute_sql("SELECT last_insert_rowid()").fetchone()[0]
                database.execute_sql("INSERT INTO wiki_page_fts(rowid, title, body, kb_id) VALUES (?, ?, ?, ?)", (page_id, f"Page {i}", text, kb.id))
        del cur
    return kb, dims


def measure(chunks: int, dims: int, queries: int) -> tuple[float, float, float]:
    import numpy as np

    from platform_server.features.wiki import retrieval
    from platform_server.integrations.llm.tokens import ESTIMATE

    with tempfile.TemporaryDirectory(prefix="wiki-bench-") as data_dir:
        kb, dims = build(data_dir, chunks, dims)
        rng = random.Random(11)
        gen = np.random.default_rng(11)
        times = []
        for _ in range(queries):
            query = "how is the " + " ".join(TAIL[rng.randrange(50, 5000)] for _ in range(3))
            vec = gen.standard_normal(dims).astype(np.float32)
            vec /= np.linalg.norm(vec)
            started = time.perf_counter()
            retrieval.passages([kb], 0, query, {kb.id: retrieval.QueryVector(vec.tobytes(), None)}, 1500, ESTIMATE.count)  # type: ignore[list-item,attr-defined]
            times.append((time.perf_counter() - started) * 1000)
        cold = times[0]  # the first query after a change loads the KB's vectors into memory
        times.sort()
        return cold, statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    print(f"{'chunks':>8} {'dims':>5} {'cold ms':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for n in args.chunks:
        cold, p50, p95 = measure(n, args.dims, args.queries)
        print(f"{n:>8} {args.dims:>5} {cold:>8.1f} {p50:>8.1f} {p95:>8.1f}")


if __name__ == "__main__":
    main()
