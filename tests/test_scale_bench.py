"""`scripts/bench --scale` cannot rot: its seeder fills a fresh install in bulk (no API), the install
starts on it, and its routes list and search exactly what was seeded; the bench's own timing runs too."""

from __future__ import annotations

import os

import aiohttp
import pytest

from scripts.benchmarks import scale


async def test_the_seeded_install_starts_lists_and_searches_what_was_seeded(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATFORM_SKIP_LOCAL_MODEL", "1")
    work = str(tmp_path)
    data_dir = os.path.join(work, "data")
    first, _, _ = await scale.start(data_dir, os.path.join(work, "first.log"))  # migrations and the admin
    first.stop()
    sizes = scale.Sizes(conversations=30, messages=600, agents=7, chunks=0, db_bytes=4 * 2**20)
    seeded = scale.seed(os.path.join(data_dir, "platform.db"), sizes)
    assert len(seeded.conversation_ids) == 30 and seeded.db_mb >= 4  # padded up to the database size asked for
    proc, _, token = await scale.start(data_dir, os.path.join(work, "server.log"))
    try:
        base = proc.url + "/api/v1"
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer " + token}) as s:
            async with s.get(base + "/conversations/page?page=1&size=50") as r:
                page = (await r.json())["data"]
            # the 30 seeded, newest first, and the archived padding conversation
            assert page["total"] == 31 and page["records"][0]["conversationId"] == seeded.conversation_ids[0]
            assert page["records"][0]["messageCount"] == 60  # the big one: a tenth of the messages
            async with s.get(base + f"/conversations/page?page=1&size=20&keyword={seeded.needle}") as r:
                found = (await r.json())["data"]
            assert [c["conversationId"] for c in found["records"]] == [seeded.needle_conversation]
            async with s.get(base + f"/conversations/{seeded.big_conversation}/messages?limit=50") as r:
                latest = (await r.json())["data"]
            assert len(latest["messages"]) == 50 and latest["hasMore"] is True
            async with s.get(base + "/agents") as r:
                names = {a["name"] for a in (await r.json())["data"]}
            assert {f"Agent {i}" for i in range(7)} <= names
        figures = await scale.routes(proc.url, token, os.path.join(data_dir, "platform.db"), seeded, sizes, 3)
        names = [f.name for f in figures]
        assert names[:2] + names[3:] == ["conversations page", "keyword search", "latest 50 messages", "agent list"]
        assert names[2].startswith("keyword search before the index")  # the LIKE scan, in raw SQL
        assert all(0 < f.platform.p50_ms <= f.platform.p95_ms and 0 < f.baseline.p95_ms for f in figures)
    finally:
        proc.stop()


def test_the_wiki_figures_time_a_search_a_turns_retrieval_and_the_raw_keyword_query(tmp_path: object) -> None:
    search, turn, raw = scale.wiki_times(200, 4, str(tmp_path))
    assert all(len(t.samples) == 4 and 0 < t.p50_ms <= t.p95_ms for t in (search, turn, raw))
    assert os.listdir(str(tmp_path)) == []  # its database is removed
