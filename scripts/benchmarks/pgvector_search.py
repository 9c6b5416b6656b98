"""Wiki search on PostgreSQL at 100,000 chunks: pgvector (cosines in SQL) against the in-process matrices built
from the same rows, each measured in a fresh process (latency of the search preview's calls and of the vector
part alone, and the process's RSS before and after its searches). Needs the `pgserver` wheel (PostgreSQL 16 with
pgvector), as tests/test_pgvector.py.

Run alone: `.venv/bin/python -m scripts.benchmarks.pgvector_search [--chunks 100000] [--dims 384] [--queries 30]`.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from platform_server import pg
from platform_server.db import database, run_migrations
from platform_server.features.models.models import MIGRATIONS as MODEL_MIGRATIONS
from platform_server.features.wiki import pgvector, search, vector_index
from platform_server.features.wiki.kbs import embedding_model
from platform_server.features.wiki.models import MIGRATIONS, KnowledgeBase
from platform_server.ports import changes, vectors
from scripts.benchmarks.wiki_search import fill


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def _p(times: list[float], q: float) -> float:
    times = sorted(times)
    return times[min(len(times) - 1, int(round(q * (len(times) - 1))))]


def measure(mode: str, url: str, kb_id: int, queries_path: str) -> dict[str, float]:
    """In this (fresh) process: the searches through one vector path."""
    pg.open_database(url)
    changes.use(changes.PostgresFeed())
    vectors.use(pgvector.PGVECTOR if mode == "pgvector" else vector_index.IN_PROCESS)
    data = np.load(queries_path, allow_pickle=False)
    texts, qvs = data["texts"].tolist(), data["vectors"]
    model = embedding_model(KnowledgeBase.get_by_id(kb_id))
    before = rss_mb()
    full: list[float] = []
    nearest: list[float] = []
    for n, (text, qv) in enumerate(zip(texts, qvs)):
        blob = search.pack(qv)
        started = time.perf_counter()
        search.search_pages([kb_id], text, blob, 10, False)  # what the search preview (tool.preview) runs
        search.search_chunks([kb_id], text, blob, 10)
        full.append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        vectors.current().nearest_chunks(kb_id, search.unpack(blob).copy(), model, 10)
        nearest.append(1000 * (time.perf_counter() - started))
    return {
        "rss_before_mb": round(before), "rss_after_mb": round(rss_mb()), "kept_mb": round(vectors.current().kept_bytes() / 2**20),
        "first_ms": round(full[0]), "p50_ms": round(statistics.median(full[1:]), 1), "p95_ms": round(_p(full[1:], 0.95), 1),
        "nearest_p50_ms": round(statistics.median(nearest[1:]), 1), "nearest_p95_ms": round(_p(nearest[1:], 0.95), 1),
    }


def run(chunks: int, dims: int, queries: int) -> dict[str, dict[str, float]]:
    import pgserver

    root = tempfile.mkdtemp(prefix="pgvector-bench-")
    os.chmod(root, 0o755)  # as root pgserver runs the server as its own user
    server = pgserver.get_server(os.path.join(root, "data"), cleanup_mode="stop")
    try:
        server.psql('CREATE DATABASE "bench";')
        url = str(server.get_uri("bench"))
        pg.open_database(url)
        run_migrations(MODEL_MIGRATIONS + MIGRATIONS)
        assert pgvector.choose() == "pgvector"
        kb = KnowledgeBase.create(workspace_id=1, name="bench")
        started = time.perf_counter()
        words, vecs = fill(kb.id, chunks, dims)
        fill_s = time.perf_counter() - started
        database.execute_sql("ANALYZE")  # the planner's statistics, as autovacuum keeps them on a live server
        rng, nrng = random.Random(11), np.random.default_rng(11)
        texts = [" ".join(rng.choice(words) for _ in range(3)) for _ in range(queries + 1)]
        near = vecs[[rng.randrange(len(vecs)) for _ in range(queries + 1)]] + 0.3 * nrng.standard_normal((queries + 1, dims)).astype(np.float32)
        path = os.path.join(root, "queries.npz")
        np.savez(path, texts=np.array(texts), vectors=near.astype(np.float32))
        del vecs, near
        out: dict[str, dict[str, float]] = {"fill": {"seconds": round(fill_s)}}
        for mode in ("in-process", "pgvector"):
            child = [sys.executable, "-m", "scripts.benchmarks.pgvector_search", "--measure", mode, url, str(kb.id), path]
            out[mode] = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        return out
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.benchmarks.pgvector_search", description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--measure", nargs=4, metavar=("MODE", "URL", "KB", "QUERIES"), help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.measure:
        mode, url, kb, path = ns.measure
        print(json.dumps(measure(mode, url, int(kb), path)))
        return
    for name, figures in run(ns.chunks, ns.dims, ns.queries).items():
        print(f"{name:>10}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
