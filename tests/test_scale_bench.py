"""`scripts/bench --scale` cannot rot: its seeder fills a fresh install in bulk (no API), the install
starts on it, and its routes list and search exactly what was seeded; the bench's own timing runs too."""

from __future__ import annotations

import os
import sqlite3

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
    assert "messages" in seeded.steps and "keyword indexes built" in seeded.steps and "padding" in seeded.steps
    con = sqlite3.connect(os.path.join(data_dir, "platform.db"))
    try:
        # seeded without the FTS triggers: both indexes were built from the rows, the triggers are back
        # (the padding and every later write kept in step), and the journal is the server's again
        triggers = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%fts%'")}
        assert {"message_fts_queue", "message_fts_delete", "message_fts_update"} <= triggers
        assert {"conversation_title_fts_insert", "conversation_title_fts_update"} <= triggers
        for fts in ("message_fts", "conversation_title_fts"):
            con.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")  # raises on a mismatch
        assert con.execute("SELECT COUNT(*) FROM message_fts").fetchone()[0] == con.execute("SELECT COUNT(*) FROM message").fetchone()[0]
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        pad = con.execute("SELECT COUNT(*), MIN(LENGTH(content_parts)) FROM message WHERE content_parts IS NOT NULL").fetchone()
        assert pad[0] >= 1 and pad[1] > 2**20  # few large rows: pasted screenshots
    finally:
        con.close()
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
    # a restart is timed to healthy with the token of the start before: no login (bcrypt) in the figure
    again, seconds, same = await scale.start(data_dir, os.path.join(work, "again.log"), token)
    again.stop()
    assert same == token and 0 < seconds


def test_the_wiki_figures_time_a_search_a_turns_retrieval_and_the_raw_keyword_query(tmp_path: object) -> None:
    search, turn, raw, fill_s = scale.wiki_times(200, 4, str(tmp_path))
    assert fill_s > 0
    assert all(len(t.samples) == 4 and 0 < t.p50_ms <= t.p95_ms for t in (search, turn, raw))
    assert os.listdir(str(tmp_path)) == []  # its database is removed
